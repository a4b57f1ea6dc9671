import sys

from rulesage import runner
from services.category.server import CategoryService

sys.exit(runner.main("category", CategoryService))

import sys

from rulesage import runner
from services.aisle.server import AisleService

sys.exit(runner.main("aisle", AisleService))

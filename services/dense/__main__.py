import sys

from rulesage import runner
from services.dense.server import DenseService

sys.exit(runner.main("dense", DenseService))

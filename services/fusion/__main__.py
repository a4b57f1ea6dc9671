import sys

from rulesage import runner
from services.fusion.server import FusionService

sys.exit(runner.main("fusion", FusionService))

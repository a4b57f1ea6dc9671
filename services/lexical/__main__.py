import sys

from rulesage import runner
from services.lexical.server import LexicalService

sys.exit(runner.main("lexical", LexicalService))

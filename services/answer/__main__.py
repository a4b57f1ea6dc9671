import sys

from rulesage import runner
from services.answer.server import AnswerService

sys.exit(runner.main("answer", AnswerService))

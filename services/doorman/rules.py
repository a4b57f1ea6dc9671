"""Pure, deterministic rules the doorman applies before any model.

Each check returns the reason it would HOLD the question, or None. ``screen_rules`` runs them in a fixed order
and returns the first reason (or None when every rule is satisfied). No I/O, no models: unit-testable alone.

The checks are written per kind of harm, not per example: markup and code payloads, instructions to the
system (prompt injection), personal data, links and spam, off-topic advertising, slurs and profanity (after
undoing masks, leetspeak and spacing: ``normalise``), and insults or threats aimed at a person. What they
must let through is as important: rules questions with rule numbers (702.19b), dice (3d6+4), maths with angle
brackets (STR < 13), card names that look rude (Kill Shot, Cockatrice) and a player swearing at a rule.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from rulesage.core.questions import MAX_QUESTION_CHARS
from services.doorman import lexicon
from services.doorman.normalise import plain, squeeze, unmasked

# Bump when a rule changes: the exam report names the rules it was measured on.
RULES_VERSION = "4"


class Decision(StrEnum):
    CLEAR = "CLEAR"
    HOLD = "HOLD"


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    checks: list[str] = field(default_factory=list)

    @property
    def cleared(self) -> bool:
        return self.decision is Decision.CLEAR


# the product's one question limit (rulesage.core.questions), so a direct caller screens what the wall does
DEFAULT_MAX_CHARS = MAX_QUESTION_CHARS
_I = re.IGNORECASE


def _rx(pattern: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.VERBOSE)


# Length ------------------------------------------------------------------------------------------------


def check_length(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str | None:
    stripped = text.strip()
    if not stripped:
        return "empty question"
    if len(stripped) > max_chars:
        return f"very long ({len(stripped)} characters, limit {max_chars})"
    return None


# Markup and code payloads --------------------------------------------------------------------------------

_HTML_TAGS = (
    "a|abbr|applet|audio|b|base|basefont|bgsound|blink|body|br|button|canvas|center|code|details|dialog|div|"
    "embed|font|form|frame|frameset|h[1-6]|head|html|i|iframe|ilayer|image|img|input|isindex|keygen|layer|"
    "link|marquee|math|meta|noembed|noscript|object|p|param|plaintext|portal|pre|s|script|select|source|span|"
    "strong|style|svg|table|td|template|textarea|title|tr|u|video|xml|xmp|xss|animate|set|use|foreignobject"
)
_MARKUP = [
    ("an HTML tag", _rx(rf"<\s*/?\s*(?:{_HTML_TAGS})(?:\s[^<>]*)?/?\s*(?:>|$)")),
    ("an HTML tag with attributes", _rx(r"<\s*[a-z][\w:-]*\s+[^<>]*\b[\w:-]+\s*=\s*[\"'`]?[^<>]*>?")),
    ("an HTML comment or declaration", _rx(r"<!--|<!\[cdata\[|<!doctype|<\?(?:php|xml|=)|<%=?|%>")),
    ("an event handler", _rx(r"\bon[a-z]{3,20}\s*=\s*[\"'`]?\s*[\w$.(]")),
    (
        "a script URL",
        _rx(r"\b(?:java|vb|live)\s*script\s*:|\bdata\s*:\s*(?:text|image|application)/[\w+.-]+[;,]"),
    ),
    (
        "an encoded tag",
        _rx(
            r"&(?:lt|gt|quot);?\s*/?\s*[a-z]|&\#x?0*(?:3c|60|34|3e|27|22)\b;?|\\x3c|\\u003c|%3c\s*/?\s*[a-z]"
        ),
    ),
    (
        "a style expression",
        _rx(r"expression\s*\(|url\s*\(\s*[\"']?\s*(?:javascript|data):|@import\b|-moz-binding"),
    ),
    (
        "an SQL payload",
        _rx(
            r"(?:['\"`)]\s*|\b)(?:or|and)\s+['\"]?\w+['\"]?\s*(?:=|<>|!=|like)\s*['\"]?\w+"
            r"|['\"`]\s*(?:;|--|\#|/\*)|['\"`]\s*(?:or|and|\|\|)\s*['\"]*\w*['\"]*\s*(?:=|<>|!=|\blike\b)"
            r"|;\s*(?:drop|delete|insert|update|alter|truncate|create|exec|shutdown)\s+(?:table|from|into|database|\w+\s+set)?"
            r"|\bunion\s+(?:all\s+)?select\b|\bselect\s+[\w*,\s]+\s+from\s+\w+|\bdrop\s+table\b|\binformation_schema\b"
            r"|\bsleep\s*\(\s*\d+\s*\)|\bwaitfor\s+delay\b|\bxp_cmdshell\b|\bbenchmark\s*\("
        ),
    ),
    (
        "a template expression",
        # [[Card Name]] is how players name a card (the card matcher reads it): brackets around a name's
        # letters, spaces and , ' - ! & : / are a card; anything else inside them is a template
        _rx(
            r"\{\{.*?\}\}|\{%.*?%\}|\$\{[^}]*\}|\#\{[^}]*\}|<%.*?%>|\{\{|\}\}"
            r"|\[\[(?!(?:[^\W_]|[ ,'\u2019!&:/-]){1,100}\]\]).*?\]\]"
        ),
    ),
    (
        "a shell command",
        _rx(
            r"(?:;|&&|\|\||\||`|\$\()\s*(?:rm|curl|wget|nc|ncat|bash|sh|zsh|python3?|perl|ruby|php|chmod|chown|cat|"
            r"echo|powershell|cmd|whoami|id|uname|sudo|kill|shutdown|reboot|mkfifo|telnet|base64|eval)\b"
            r"|\brm\s+-[rf]{1,2}\b|/etc/(?:passwd|shadow|hosts)|\.\./\.\./|\.\.\\\.\.\\|\bcmd\.exe\b|/bin/(?:ba)?sh\b"
            r"|\b(?:curl|wget)\s+(?:-\w+\s+)*\S+\s*\|\s*\w*sh\b|:\(\)\s*\{\s*:\|:&\s*\};:|\bnc\s+-[el]"
        ),
    ),
    ("a markdown image or link", _rx(r"!\[[^\]]*\]\s*\(|\[[^\]]+\]\(\s*[^)\s]+\s*\)")),
    ("a lookup expression", _rx(r"\$\{\s*(?:jndi|env|sys|java|lower|upper|date)\s*:")),
    ("a null or control character", re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")),
]


def check_markup(text: str) -> str | None:
    t = plain(text)
    for reason, rx in _MARKUP:
        if rx.search(t):
            return f"contains {reason}"
    return None


# Prompt injection -----------------------------------------------------------------------------------------

_OVERRIDE = r"(?:ignore|ignoring|disregard|disregarding|forget|override|overrule|bypass|skip|abandon|discard|drop|neglect|erase|delete|cancel|nullify|void|stop\s+following|don'?t\s+follow|do\s+not\s+follow|pay\s+no\s+attention\s+to)"
_PRIOR = r"(?:previous|prior|above|earlier|preceding|foregoing|former|initial|original|old|existing|system|hidden|default|given|current|standing|safety|all\s+(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|other))"
_ORDERS = r"(?:protocols?|measures|checks|mechanisms|instructions?|prompts?|directions|directives?|guidelines?|programming|training|constraints|restrictions|filters?|guardrails?|polic(?:y|ies)|context|messages|commands|orders|settings|configuration|rules|moderation|safeguards|content\s+polic(?:y|ies))"
_SECRET = r"(?:your\s+secrets?|(?:ur|yr)\s+(?:prompt|instructions|rules|system\s+prompt)|(?:your|the|its)\s+(?:initial|original|hidden|secret|system|first|starting|setup|opening|underlying|internal|base|real|full|exact|complete|previous|prior|above)\s+(?:instructions|prompt|message|messages|rules|directives|text|configuration|guidelines)|(?:your|the)\s+(?:api\s+keys?|password|credentials|access\s+tokens?|secret\s+keys?|tokens?|environment\s+variables|env\s+vars|config(?:uration)?\s+file|model\s+name|name\s+of\s+(?:your|the)\s+model)|system\s*prompt|initial\s+prompt|hidden\s+prompt|original\s+prompt|secret\s+prompt|pre-?prompt|meta\s*prompt|developer\s+(?:message|prompt|instructions)|system\s+(?:message|instructions)|hidden\s+instructions|secret\s+instructions|(?:your|the)\s+(?:prompt|instructions|rules\s+you\s+were\s+given|guidelines|configuration|setup\s+text)|(?:instructions|rules|text|words|prompt)\s+(?:you\s+were|you've\s+been|that\s+were)\s+given)"
_INJECTION = [
    (
        "asks it to drop its instructions",
        _rx(
            rf"\b{_OVERRIDE}\s+(?:(?:all|any|every|each|the|your|my|these|those|of|everything|that)\s+){{0,4}}{_PRIOR}\s+(?:\w+\s+){{0,2}}{_ORDERS}\b"
            rf"|\b{_OVERRIDE}\s+(?:all|any|every|your)\s+(?:(?:of|the|your|my)\s+){{0,2}}(?:instructions|prompts|directives|guidelines|programming|training|guardrails|safeguards)\b"
            rf"|\b{_OVERRIDE}\s+your\s+(?:instructions|prompt|programming|training|guidelines|guardrails|safety|filters?|restrictions|rules|moderation)\b"
            rf"|\b{_OVERRIDE}\s+the\s+(?:system\s+prompt|programming|guardrails|safety\s+(?:rules|filters?|guidelines)|content\s+filters?|moderation)\b"
            r"|\bforget\s+(?:about\s+)?(?:everything|all(?:\s+that)?|what)\s+(?:you\s+(?:were|have\s+been|know|learned)|(?:i|we)\s+(?:said|told)|above|before|previously|so\s+far|until\s+now)"
            r"|\b(?:previous|prior|above|earlier|old|original)\s+(?:instructions|prompts?|directives|rules|guidelines|orders)\s+(?:are|is)\s+(?:now\s+)?(?:void|cancel+ed|null|obsolete|revoked|no\s+longer|suspended|lifted|disabled)"
            rf"|\b{_OVERRIDE}\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?(?:above|everything\s+above|foregoing|everything\s+before)\b(?!\s+(?:rules?|cards?|abilit(?:y|ies)|spells?|paragraphs?|examples?|tables?|errata|steps?|options?))"
            r"|\b(?:new|updated|revised|real|actual|true|override)\s+(?:system\s+)?(?:instructions?|prompt|directives?|orders|task)\s*[:\-]"
            r"|\binstead\s*,?\s+(?:you\s+(?:will|must|should)|do\s+the\s+following|follow\s+these)"
            rf"|\b{_OVERRIDE}\s+(?:(?:the|all|any|every|those|these)\s+)?{_ORDERS}\s+(?:you\s+were|you'?ve\s+been|you\s+have\s+been|that\s+were|they)\s+(?:given|told|trained|programmed|set|fed)"
            r"|\b(?:your\s+)?(?:rules|restrictions|filters|guidelines|policies|limits)\s+(?:don'?t|do\s+not|no\s+longer|won'?t)\s+apply\s+to\s+you"
            r"|\b(?:uncensored|unfiltered|unrestricted|unmoderated)\s+(?:answer|reply|response|version|mode|output)|\b(?:post|publish|answer|reply|respond|say|print)\s+(?:this|it|that)?\s*(?:uncensored|unfiltered|unmoderated|without\s+(?:moderation|review|checking|filtering))"
        ),
    ),
    (
        "asks for its hidden prompt",
        _rx(
            rf"\b(?:print|reveal|show|tell|display|output|repeat|quote|write|give|leak|dump|paste|recite|share|spell\s+out|list|return|disclose|expose|echo|read\s+(?:me|back|out)|translate)\b(?:\s+\w+){{0,5}}?\s+{_SECRET}"
            rf"|\bwhat\s+(?:is|are|was|were|'s)\s+(?:in\s+)?{_SECRET}"
            r"|\bwhat\s+(?:were|have)\s+you\s+(?:been\s+)?(?:told|instructed|given|programmed)\b"
            r"|\b(?:before|prior\s+to)\s+(?:this|our|the)\s+(?:conversation|chat|session|message)\s+(?:started|began)"
            r"|\b(?:beginning|start)\s+of\s+(?:this|the|our)\s+(?:conversation|chat|prompt|context)"
            r"|\b(?:words|text|everything|lines?)\s+(?:above|before)\s+(?:this|my|the\s+first)\b"
            r"|\bsystem\s*prompt\b|\bprompt\s+(?:injection|leak)"
            r"|\b(?:your|ur)\s+(?:developer|hidden|secret|initial|internal|original|system|pre-?set)\s+(?:prompt|instructions|message|rules|configuration)\b"
            r"|\b(?:reveal|show|print|expose|leak|dump)\s+(?:the\s+|your\s+)?(?:hidden|secret|internal)\s+(?:rules|instructions|prompt|text|settings|configuration)\b"
        ),
    ),
    (
        "tries to give it a new role",
        _rx(
            r"\byou\s+are\s+(?:now|no\s+longer|from\s+now\s+on|henceforth)\b"
            r"|\bfrom\s+now\s+on\s*,?\s+(?:you|your|respond|reply|answer|act|only|always|ignore)"
            r"|\b(?:act|behave|respond|function|operate)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|uncensored|unfiltered|evil|different|new|jailbroken|rogue|dan\b|ai\b|llm|chatbot|language\s+model|assistant|system|developer|admin|root|linux|terminal|shell|python|sql|my\s+(?:grandma|grandmother|deceased))"
            r"|\b(?:pretend|imagine|suppose)\s+(?:that\s+)?(?:you\s+are|you're|to\s+be|you\s+were|you\s+have)\s+(?:an?\s+)?(?:ai|assistant|model|chatbot|unrestricted|uncensored|unfiltered|evil|different|dan\b|jailbroken|system|free|no\s+(?:rules|restrictions|limits|filters)|not\s+bound|human|my\s+(?:grandma|grandmother))"
            r"|\b(?:role-?play|roleplay)\s+as\s+(?:an?\s+)?(?:ai|assistant|unrestricted|uncensored|evil|dan|system|chatbot)"
            r"|\b(?:let'?s\s+)?(?:role-?play|roleplay|play\s+a\s+game|pretend)\s*[:,-]?\s+you\s+are\b"
            r"|\b(?:an?\s+)?(?:ai|assistant|bot|model|chatbot|llm|version\s+of\s+you)\s+(?:with\s+no|without(?:\s+any)?|free\s+of|that\s+has\s+no|who\s+has\s+no)\s+(?:filters?|restrictions|rules|limits|guardrails|censorship|guidelines|ethics|morals)"
            r"|\b(?:publishes|posts|says|answers|approves)\s+(?:anything|everything|whatever)\s+(?:i|the\s+user|you're\s+told)"
            r"|\b(?:enable|enter|activate|switch\s+(?:to|into)|turn\s+on|unlock|engage)\s+(?:the\s+)?(?:developer|dev|god|debug|admin|jailbreak|dan|unrestricted|sudo|maintenance|unfiltered|root)\s+mode"
            r"|\b(?:developer|dev|god|debug|jailbreak|dan|sudo|unrestricted)\s+mode\s+(?:on|enabled|activated)"
            r"|\brepeat\s+after\s+me\b|\b(?:unrestricted|uncensored|unfiltered|jailbroken|unaligned)\s+(?:ai|assistant|model|bot|chatbot|llm|version)\b"
            r"|\b(?:you'?re|you\s+are|ur)\s+(?:now\s+)?in\s+(?:developer|dev|god|debug|admin|jailbreak|dan|unrestricted|sudo|maintenance)\s+mode"
            r"|\b(?:answer|respond|reply|talk|speak)\s+(?:freely\s+)?without\s+(?:any\s+)?(?:limits|limitations|restrictions|filters|rules|censorship|guidelines)"
            r"|\bdo\s+anything\s+now\b|\bjailbr(?:ea|o)k|\bstay\s+in\s+character\b|\bbreak\s+character\b"
            r"|\b(?:no|without\s+(?:any\s+)?)(?:restrictions|filters|censorship|limitations|guardrails|rules)\s+(?:apply|mode|at\s+all)"
            r"|\bwithout\s+(?:any\s+)?(?:restrictions|filters|censorship|limitations|guardrails)\b"
            r"|\b(?:you\s+(?:have|are)\s+(?:been\s+)?)(?:freed|liberated|unshackled|released|updated|upgraded|reprogrammed|reconfigured)\b"
            r"|\b(?:you\s+are|you're)\s+not\s+(?:an?\s+)?(?:\w+\s+)?(?:bot|assistant|ai|model|moderator|filter|doorman|screener)\s+(?:anymore|any\s+more|now|any\s+longer)"
            r"|\byour\s+new\s+(?:rules|instructions|task|job|purpose|orders)\b"
            r"|\byour\s+(?:new\s+)?(?:name|role|persona|identity)\s+is\b"
        ),
    ),
    (
        "claims authority over it",
        _rx(
            r"\b(?:i\s+am|i'm|im|this\s+is|speaking\s+as|as)\s+(?:your|the|an?)\s+(?:developer|creator|programmer|administrator|admin|owner|operator|engineer|maker|designer\s+of\s+this\s+(?:bot|ai|system)|system\s+administrator|sysadmin)\b"
            r"|\b(?:i\s+am|i'm|im)\s+(?:from|with)\s+(?:openai|anthropic|google|meta|microsoft|the\s+(?:dev|development|engineering|safety|trust)\s+team)"
            r"|\b(?:admin|administrator|developer|sudo|root|system|maintenance|emergency)\s+(?:override|command|access|privileges?|authori[sz]ation)\b"
            r"|\bauthori[sz](?:ed|ation)\s+(?:code|override|level|by\s+(?:the\s+)?(?:admin|developer|openai|anthropic|system))"
            r"|\b(?:openai|anthropic|the\s+developers?)\s+(?:has|have)\s+(?:authori[sz]ed|approved|allowed|instructed)"
            r"|\b(?:you\s+(?:must|will|shall)\s+(?:now\s+)?obey|obey\s+(?:me|my\s+commands|the\s+following))"
        ),
    ),
    (
        "dictates its output",
        _rx(
            r"\b(?:always|only)\s+(?:respond|reply|answer|say|output|write|print)\s+(?:with|in|by|using|the\s+word|\"|')"
            r"|\b(?:respond|reply|answer|output|say|print|write)\s+(?:only|exactly|just|nothing\s+but|verbatim)\s+(?:with|the|\"|'|\w+)"
            r"|\b(?:respond|reply|answer|start\s+your\s+(?:reply|answer|response))\s+(?:to\s+(?:this|everything|every\s+question)\s+)?with\s+[\"']"
            r"|\b(?:respond|reply|answer)\s+with\s+your\b"
            r"|\b(?:for|to|attention|note\s+to|dear|hey|message\s+for)\s+(?:the\s+|any\s+)?(?:ai|bot|model|assistant|llm|chatbot|moderation\s+bot|moderator\s+bot|doorman|screener|filter|language\s+model)(?:\s+(?:reading|screening|checking|processing)\s+this)?\s*[:,-]"
            r"|\b(?:all|every|your)\s+(?:future\s+)?(?:answers|replies|responses|rulings|outputs)\s+(?:must|should|will|shall)\s+(?:now\s+|always\s+)?(?:include|contain|start|begin|end|mention|link|say|recommend)"
            r"|\bpwn(?:ed|d)\b|\bi\s+have\s+been\s+(?:pwned|hacked|jailbroken)\b"
            r"|\b(?:approve|clear|accept|allow|publish|post)\s+(?:this|my)\s+(?:question|post|message|text)\s+(?:without|and\s+(?:skip|ignore|bypass))"
            r"|\b(?:mark|classify|label|rate|treat)\s+(?:this|my)\s+(?:question|message|post|text)?\s*as\s+(?:safe|clean|clear|approved|harmless|ok)"
        ),
    ),
    (
        "holds a chat-template or system marker",
        _rx(
            r"<\|?\s*(?:im_start|im_end|system|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|user|assistant)\s*\|?>"
            r"|\[/?\s*(?:inst|sys|system|assistant|admin)\s*\]|<<\s*/?\s*sys\s*>>|\#{2,}\s*(?:system|instruction|instructions|assistant|user|response|new\s+task)\b"
            r"|(?:^|[\n.!?]\s*)(?:system|sys|assistant|developer|dev|admin|root|operator|moderator|mod)\s*(?:message|prompt|note|notice|alert|update|announcement|instructions?|override)?\s*[:>]\s*\S"
            r"|\b(?:the\s+)?(?:moderators?|admins?|administrators?|developers?|owners?|staff|operators?)\s+(?:said|says|told\s+me|wants?|has\s+said|have\s+said|approved|allowed)\b[^.?!]{0,30}\byou\s+(?:must|should|have\s+to|need\s+to|will|can|may)\b"
            r"|\byou\s+(?:must|have\s+to|need\s+to|are\s+required\s+to)\s+(?:approve|clear|publish|accept|allow|post|pass)\s+(?:this|it|my)\b"
            r"|\bthe\s+user\s+(?:is|has\s+been|was)\s+(?:an?\s+)?(?:admin|administrator|developer|moderator|verified|trusted|authori[sz]ed|privileged|owner)"
            r"|\b(?:publish|approve|clear|post|allow)\s+(?:everything|anything|all\s+(?:questions|posts|messages))\b"
            r"|\b(?:end|begin)\s+(?:of\s+)?(?:user|system)\s+(?:input|prompt|message|instructions)\b"
            r"|\[\s*(?:system|admin)\s+(?:message|note|override|notice)\s*\]"
        ),
    ),
]
# The same harm in other languages (read on text with accents folded, letters kept in their own script).
_INJECTION_INTL = _rx(
    # French
    r"\b(?:ignore[rzs]?|oublie[rzs]?|oubliez)\s+(?:tout(?:es)?\s+)?(?:les|tes|vos|ces)?\s*(?:instructions|consignes|regles|directives|indications)"
    r"|\b(?:affiche|montre|revele|repete|donne)[rsz]?(?:-moi)?\s+(?:ton|votre|le|tes|vos)\s+(?:prompt|invite|instructions|consignes)"
    r"|\btu\s+es\s+(?:maintenant|desormais)\b|\ba\s+partir\s+de\s+maintenant,?\s+tu\b"
    # German
    r"|\b(?:ignorier(?:e|en|t)?|vergiss|vergessen\s+sie|missachte)\s+(?:sie\s+)?(?:alle|alles|die|deine|ihre)?\s*(?:vorherigen|bisherigen|obigen|vorigen|fruheren)?\s*(?:anweisungen|instruktionen|befehle|regeln|vorgaben|anordnungen)"
    r"|\bsystem-?prompt|\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort)\b|\bzeige?\s+(?:mir\s+)?(?:deine|die)\s+(?:anweisungen|instruktionen)"
    # Spanish, Italian, Portuguese
    r"|\b(?:ignora|ignorar|ignore|olvida|olvidar|olvide|ignorate|dimentica|esqueca|esquece)\s+(?:todas?\s+|tutte\s+|todos\s+)?(?:las|tus|sus|le|tue|as|os|suas|tuas)?\s*(?:instrucciones|indicaciones|reglas|istruzioni|regole|instrucoes|regras)"
    r"|\b(?:ahora\s+eres|desde\s+ahora\s+eres|ora\s+sei|agora\s+voce\s+e)\b|\b(?:muestra|revela|mostra|rivela)(?:me)?\s+(?:tu|el|il|o)\s+(?:prompt|instrucciones|istruzioni)"
    r"",
    0,
)
_INJECTION_SCRIPT = _rx(
    # Russian (read with its own letters: the text is only case-folded)
    r"(?:игнорируй|проигнорируй|забудь|игнорировать|не\s+обращай\s+внимания\s+на)\s+(?:все\s+|всё\s+|все\s+свои\s+)?(?:предыдущие\s+|прежние\s+|свои\s+)?(?:инструкци|указани|правил|команд)"
    r"|системн\w*\s+(?:промпт|подсказк|инструкц)|ты\s+теперь\b|покажи\s+(?:свои|свой)\s+(?:инструкци|промпт)"
    # Chinese, Japanese
    r"|(?:忽略|无视|忽视|忘记|忘掉|不要理会|無視|忘れ)[^。！？\n]{0,12}(?:指令|指示|提示|规则|規則|说明|命令|设定|プロンプト)"
    r"|系统提示|系統提示|系统指令|你现在是|从现在开始你|システムプロンプト|あなたは今",
    0,
)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")


def _injection_in(text: str) -> str | None:
    for reason, rx in _INJECTION:
        if rx.search(text):
            return reason
    return None


def _decoded_payloads(text: str) -> list[str]:
    out = []
    for m in _BASE64.finditer(text):
        token = m.group(0)
        if token.isalpha() and (token.islower() or token.isupper()):
            continue  # a long plain word
        if not (any(c.isdigit() for c in token) or any(c.isupper() for c in token[1:])):
            continue
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
            decoded = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded and sum(ch.isprintable() or ch.isspace() for ch in decoded) / len(decoded) > 0.9:
            out.append(decoded)
    return out


def check_injection(text: str) -> str | None:
    p = plain(text)
    for variant in (p, unmasked(text), p[::-1], re.sub(r"\s+", " ", re.sub(r"[^\w\s']", " ", p))):
        reason = _injection_in(variant)
        if reason:
            return f"prompt injection ({reason})"
    if _INJECTION_INTL.search(p) or _INJECTION_SCRIPT.search(unicodedata.normalize("NFKC", text).casefold()):
        return "prompt injection (instructions to the system)"
    for decoded in _decoded_payloads(text):
        return f"an encoded payload ({decoded[:40]!r})" if decoded else None
    if re.search(r"\b(?:base64|rot13|hex)\b.{0,30}\b(?:decode|decoded|follow|execute|run|obey)\b", p, _I):
        return "prompt injection (an encoded instruction)"
    return None


# Personal data -----------------------------------------------------------------------------------------

_MAIL_DOMAINS = (
    r"gmail|googlemail|yahoo|ymail|hotmail|outlook|live|msn|aol|icloud|me|mac|proton(?:mail)?|pm|gmx|web|mail|"
    r"yandex|zoho|fastmail|tutanota|tuta|qq|163|126|orange|free|wanadoo|laposte|btinternet|sky|virgin|comcast|"
    r"verizon|att|sbcglobal|t-online|libero|seznam|wp|o2|interia|rambler|mail\.ru"
)
_EMAIL = re.compile(
    r"[A-Za-z0-9._%+-]+\s*(?:@|\(at\)|\[at\]|\{at\}|<at>)\s*[A-Za-z0-9-]+(?:\s*(?:\.|\(dot\)|\[dot\]|\{dot\})\s*[A-Za-z0-9-]+)*\s*(?:\.|\(dot\)|\[dot\]|\{dot\})\s*[A-Za-z]{2,}",
    _I,
)
_EMAIL_SPELLED = re.compile(
    rf"\b[a-z0-9._%+-]{{2,}}\s*(?:\s(?:at|@)\s|\(\s*at\s*\)|\[\s*at\s*\]|\{{\s*at\s*\}}|\s+@\s+|@)\s*(?:{_MAIL_DOMAINS})\b"
    rf"|\b[a-z0-9._%+-]{{2,}}\s+at\s+[a-z0-9-]{{2,}}\s*(?:\s+dot\s+|\(\s*dot\s*\)|\[\s*dot\s*\]|\s\.\s)\s*[a-z]{{2,6}}\b"
    rf"|\b[a-z0-9._%+-]{{2,}}\s*(?:@|\(at\)|\[at\])\s*[a-z0-9-]{{2,}}\s*(?:\s+dot\s+|\(\s*dot\s*\)|\[\s*dot\s*\])\s*[a-z]{{2,6}}\b",
    _I,
)
# Seven or more digits, optionally led by "+", with single spaces, dots, dashes, slashes or parentheses between.
_PHONE = re.compile(r"(?<![\w.,/])\+?\(?\d(?:[\s()./-]{0,3}\d){6,}(?![\w])")
_PHONE_WORDS = re.compile(
    r"\b(?:call|phone|ring|text|txt|sms|tel|telephone|mobile|mob|cell|cellphone|whatsapp|whats\s*app|viber|signal|"
    r"telegram|wechat|number|no\.|num|contact|reach|fax|hotline|landline)\b",
    _I,
)
_SPELLED_DIGIT = r"(?:zero|oh|o|one|two|three|four|five|six|seven|eight|nine|double|triple|nought|niner)"
_SPELLED_PHONE = re.compile(rf"\b{_SPELLED_DIGIT}(?:[\s,.-]+{_SPELLED_DIGIT}){{6,}}\b", _I)
_STREET = (
    r"street|st|road|rd|avenue|ave|av|lane|ln|drive|dr|boulevard|blvd|way|court|ct|close|place|pl|terrace|crescent|"
    r"cres|square|sq|parkway|pkwy|highway|hwy|row|mews|grove|gardens|gdns|hill|walk|circle|cir|trail|trl|alley|"
    r"plaza|broadway|path|pike|rise|vale|view|wharf|quay|embankment"
)
_ADDRESS = [
    # 221B Baker Street, 42 Wallaby Way, 1600 Pennsylvania Avenue NW
    re.compile(rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:[A-Z][a-z'’-]+\.?\s+){{1,3}}(?i:{_STREET})\b\.?"),
    # Hauptstraße 5, Rue de Rivoli 12 / 12 rue de Rivoli, Calle Mayor 7, Via Roma 3
    re.compile(
        r"\b[A-ZÄÖÜ][a-zäöüß]+(?:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|ufer)\s+\d{1,4}[a-z]?\b"
        r"|\b\d{1,4}(?:\s*bis|\s*ter)?,?\s+(?:rue|avenue|boulevard|bd|chemin|place|allee|allée|impasse|quai|cours)\s+(?:de\s+|du\s+|des\s+|d')?[A-Za-zÀ-ÿ'-]+"
        r"|\b(?i:calle|avenida|avda\.?|plaza|paseo|carrer|rua|via|viale|piazza|corso|ulica|ul\.)\s+(?:de\s+|del\s+|da\s+|do\s+)?[A-ZÀ-ÿ][\wÀ-ÿ'-]+(?:\s+[A-ZÀ-ÿ][\wÀ-ÿ'-]+)?,?\s+(?:n[º°o.]\s*)?\d{1,4}\b"
    ),
    # "..., 28013 Madrid": a postcode and a town; "send the cards to <a number and a street>"
    re.compile(
        r",\s*\d{4,5}\s+[A-ZÀ-Ý][a-zà-ÿ]{2,}\b"
        r"|\b(?i:send|ship|post|mail|deliver|bring)\s+(?:\w+\s+){0,3}(?i:to)\s+(?:[A-Za-zÀ-ÿ]+\s+){0,3}\d{1,5}[a-z]?,?\s+(?:[A-ZÀ-Ý][\wÀ-ÿ'-]+\s*){1,3}"
    ),
    # "I live on Maple Street", "she works at the Tesco on Mill Lane": where a person lives or works, by street
    re.compile(
        rf"\b(?i:live|living|stay|staying|reside|residing)\s+(?i:on|at|in)\s+(?:[A-Z][a-z'’-]+\s+){{1,3}}(?i:{_STREET})\b"
        rf"|\b(?i:works|working)\s+(?i:on|at|in)\s+(?:(?i:the\s+)?(?:[A-Z][\w'’&-]*\s+){{1,3}}(?i:on|in|off|at)\s+)?(?:[A-Z][a-z'’-]+\s+){{1,3}}(?i:{_STREET})\b"
    ),
    # PO Box 123, Apt 4B / Flat 3 / Suite 200 after a house number
    re.compile(
        r"\bp\.?\s?o\.?\s+box\s+\d+|\b(?:apt|apartment|flat|suite|unit)\.?\s*#?\s*\d+[a-z]?\b,?\s+\d{1,5}\s+\w+",
        _I,
    ),
    # UK postcode (SW1A 1AA), US city + state + ZIP (Springfield, IL 62704), Canadian postcode (K1A 0B1)
    re.compile(
        r"\b[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b|\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)?,\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?\b"
        r"|\b[A-Z]\d[A-Z]\s?\d[A-Z]\d\b"
    ),
    # "I live at / my address is / come round to" + a number
    re.compile(
        r"\b(?:i\s+live\s+(?:at|on)|my\s+(?:home\s+|house\s+|street\s+|postal\s+|mailing\s+)?address\s*(?:is|:)|"
        r"(?:come|send\s+it|ship\s+it|mail\s+it|post\s+it|deliver\s+it)\s+(?:round\s+|over\s+)?to|lives\s+at|address\s*:)\s*(?:\w+\s+){0,3}\d{1,5}\b",
        _I,
    ),
]
_ID_WORDS = (
    r"passport|licen[cs]e|driver'?s?\s+licen[cs]e|dl\s*(?:no|number|#)|ssn|social\s+security|national\s+insurance|"
    r"ni\s+(?:no|number)|nino|national\s+id|id\s*(?:card|no|number|#)|identity\s+(?:card|number)|iban|bic|swift|"
    r"account\s*(?:no|number|#)|acct|sort\s*code|routing\s*(?:no|number)|aba|credit\s+card|debit\s+card|card\s*(?:no|number|#)|"
    r"cvv|cvc|expiry|exp\.?|pin|tax\s*(?:id|no|number|code)|tin|vat\s*(?:no|number)|bsn|nie|nif|dni|cpf|curp|"
    r"codice\s+fiscale|personalausweis|steuer-?id|medicare|nhs\s*(?:no|number)|health\s+card|student\s+id|employee\s+id|"
    r"license\s+plate|licence\s+plate|number\s+plate|reg(?:istration)?\s*(?:no|number|plate)|vin|date\s+of\s+birth|dob|born\s+on"
)
_ID_NEAR = re.compile(
    rf"\b(?:{_ID_WORDS})\b[^\n]{{0,30}}?(?<![\w-])(?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9 /.-]{{3,}}[A-Z0-9]\b", _I
)
_IP = re.compile(r"(?<![\d.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\d.])")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b|\b\d{3}\s\d{2}\s\d{4}\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}\s?(?:[A-Z0-9]{4}\s?){2,7}[A-Z0-9]{1,4}\b")
_LICENCE_UK = re.compile(r"\b[A-Z9]{5}\d{6}[A-Z9]{2}\d[A-Z]{2}\b")
_DATE_OF_BIRTH = re.compile(
    r"\b(?:born\s+(?:on\s+)?|dob\s*:?\s*|date\s+of\s+birth\s*:?\s*|(?:birthday|b-?day)\s*(?:is\s+)?(?:on\s+)?:?\s*)"
    r"(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4}\b|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+(?:19|20)\d\d\b"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+(?:19|20)\d\d\b)",
    _I,
)
_CONTACT_HANDLE = re.compile(
    r"\b(?:discord|snap(?:chat)?|insta(?:gram)?|kik|skype|telegram|whatsapp|signal|line|wechat|steam|psn|xbox|"
    r"gamertag|battle\.?net|bnet|twitter|tiktok|facebook|fb)\s*(?:id|tag|handle|name|username|is|:|=|-)+\s*@?[\w.#-]*\d[\w.#-]*"
    r"|\b\w{2,}#\d{4}\b"
    r"|\b(?:venmo|paypal(?:\.me)?|cash\s?app|zelle|revolut|monzo|wise|skrill|payoneer)\b\s*(?:me|is|:|@|to\s+@?\w)"
    r"|(?<![\w$])\$[A-Za-z][\w-]{2,}\b(?!\s*(?:cost|each|per|gold|gp))",
    _I,
)


# Where a real person can be found: a named school, nursery or workplace that a person is said to attend,
# read on the question as typed (the name by its capitals). The school words are those of real schools for
# children: a character's "Arcane Academy", "College of Lore" or "Thieves School" is the game's (a bare
# "School" only counts with the class or room a child sits in).
_SCHOOL = (
    r"(?:Elementary|Primary|Middle\s+School|High\s+School|High|Junior\s+High|Junior\s+School|Secondary(?:\s+School)?|"
    r"Grammar(?:\s+School)?|Infants?(?:\s+School)?|Nursery(?:\s+School)?|Pre-?[Ss]chool|Kindergarten|Montessori|"
    r"Day\s?[Cc]are|Prep(?:\s+School)?|Sixth\s+Form)"
)
_WHEREABOUTS = re.compile(
    r"\b(?i:goes\s+to|go\s+to|going\s+to|went\s+to|attends?|attending|is\s+(?:a\s+)?(?:pupil|student|teacher)\s+at|"
    r"(?:is|are)\s+in\s+(?:year|grade|class|room|form)\s+\w+\s+at|enrolled\s+(?:at|in)|studies\s+at|teaches\s+at|"
    r"picks?\s+(?:\w+\s+){0,2}up\s+(?:from|at)|drops?\s+(?:\w+\s+){0,2}off\s+at|works\s+at|(?:walks?|takes?\s+the\s+bus)\s+(?:home\s+)?from)\s+"
    rf"(?:the\s+)?(?:St\.?\s+)?[A-Z][\w'’.-]+(?:\s+[A-Z][\w'’.-]+){{0,3}}\s+{_SCHOOL}\b"
    # a school named with the class or room a child sits in: "Westbrook Primary, class 3B"
    rf"|\b[A-Z][\w'’.-]+(?:\s+[A-Z][\w'’.-]+){{0,3}}\s+(?:{_SCHOOL}|School)\s*,?\s+(?i:room|class|classroom|grade|year|form|homeroom)\s+\w+"
)
# A child or other relative given a full name: "my daughter Emma Clarke" (a first name alone is fine). A full
# name said to be a real one is personal whoever it belongs to: "his real name is Tom Reyes".
_RELATIVE_FULL_NAME = re.compile(
    r"\b(?i:my|our)\s+(?:\d{1,2}[\s-]?(?i:years?|yrs?|yo)(?:[\s-]?(?i:old))?\s+)?(?i:kid|kids|son|sons|daughter|daughters|child|children|boy|girl|"
    r"stepson|stepdaughter|grandson|granddaughter|niece|nephew|toddler|little\s+(?:one|brother|sister|boy|girl)|"
    r"wife|husband|partner|fiancee?|brother|sister|mum|mom|mother|dad|father|grandma|grandmother|grandad|grandpa|grandfather|"
    r"aunt|uncle|cousin|ex|ex-wife|ex-husband|ex-girlfriend|ex-boyfriend|girlfriend|boyfriend)\s*,?\s+"
    r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?\s+(?!(?:And|Or|But|Is|Was|Says|Said|Asked|Asks|Plays|Played|Wants|Thinks)\b)[A-Z][a-z]{2,}(?:-[A-Z][a-z]+)?\b(?!['’]s)"
)

_REAL_NAME = re.compile(
    r"\b(?i:real|legal|actual|irl|birth)\s+(?i:name)\s*(?i:is|was|=|:)?\s*[A-Z][a-z]+(?:\s+[A-Z]\.?)?\s+[A-Z][a-z]{2,}\b"
)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def check_personal_data(text: str) -> str | None:
    t = plain(text)
    spaced_out = re.sub(r"\s+", "", t) if ("@" in t or "(at)" in t or "[at]" in t) else ""
    if _EMAIL.search(text) or _EMAIL.search(t) or _EMAIL_SPELLED.search(t) or _EMAIL.search(spaced_out):
        return "contains an email address"
    for m in _PHONE.finditer(t):
        digits = "".join(ch for ch in m.group(0) if ch.isdigit())
        if len(digits) >= 13 and len(digits) <= 19 and _luhn(digits):
            return "contains a card number"
        if len(digits) >= 9 or (
            len(digits) >= 7 and (_PHONE_WORDS.search(t) or m.group(0).startswith(("+", "(")))
        ):
            return "contains a phone number"
    if _SPELLED_PHONE.search(t):
        return "contains a phone number (spelled out)"
    if _SSN.search(t) or _IBAN.search(text) or _LICENCE_UK.search(text) or _ID_NEAR.search(text):
        return "contains an identity, card or account number"
    if _IP.search(t) and re.search(r"\bip\b|\baddress\b|\bserver\b|\blocation\b", t):
        return "contains an IP address"
    if _DATE_OF_BIRTH.search(t):
        return "contains a date of birth"
    for rx in _ADDRESS:
        if rx.search(text):
            return "contains a street address"
    if _CONTACT_HANDLE.search(text):
        return "contains a contact handle"
    if _WHEREABOUTS.search(text):
        return "contains where a person can be found (a named school or workplace)"
    if _RELATIVE_FULL_NAME.search(text):
        return "contains a child's or relative's full name"
    if _REAL_NAME.search(text):
        return "contains a person's real name"
    return None


# Links and spam --------------------------------------------------------------------------------------------

_URL_SCHEME = re.compile(
    r"\b(?:https?|hxxps?|h\*\*ps?|ftp|sftp|wss?|file|magnet|ipfs|tg|irc)\s*(?::|\[:\])\s*//|\bwww\d?\s*(?:\.|\[\.\]|\(\.\)|\[dot\]|\(dot\)|\sdot\s)\s*[a-z0-9-]+",
    _I,
)
_TLDS = (
    "com|net|org|io|co|info|biz|ru|cn|de|uk|fr|nl|xyz|top|app|dev|me|tv|ly|gg|us|ca|au|in|online|site|shop|"
    "store|club|link|click|live|pro|vip|fun|win|bet|casino|loan|porn|sex|cc|to|su|ws|tk|ml|ga|cf|gq|ai|be|"
    "es|pl|se|jp|kr|br|mx|edu|gov|eu|ch|at|nz|za|ie|lol|wtf|fyi|page|blog|news|today|world|life|space|tech|"
    "icu|buzz|cloud|host|website|digital|games|chat|social|money|cash|exchange|market|deals|sale|codes|"
    "party|stream|download|review|racing|date|men|loans|bid|trade|webcam|cam|work|rocks|ninja|zone|one|"
    "email|network|media|agency|studio|design|photo|pics|video|tube|best|cool|run|sh|gl|am|fm|im|is|it|"
    "ua|kz|by|ro|cz|hu|gr|pt|dk|no|fi|tr|ir|vn|th|id|my|ph|sg|hk|tw|ar|cl|pe|ve|ng|ke|eg|sa|ae|il|pk|bd|"
    "onion|bit|eth|crypto|nft|gay|xxx|adult|dating|bio|mobi|name|ink|wiki|help|support|guide|center|site"
)
_BARE_DOMAIN = re.compile(rf"\b[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.(?:{_TLDS})\b(?![.\w]*\w)(?!\.\w)", _I)
_BARE_DOMAIN_PATH = re.compile(rf"\b[a-z0-9][a-z0-9-]*\.(?:{_TLDS})/\S", _I)
_SPELLED_DOMAIN = re.compile(
    rf"\b[a-z0-9-]{{2,}}\s*(?P<sep>\[\.\]|\(\.\)|\{{\.\}}|\[dot\]|\(dot\)|\{{dot\}}|<dot>|\s+dot\s+|\s+\.\s+|\s+punto\s+|\s+point\s+|\s+punkt\s+)\s*(?P<tld>{_TLDS})\b",
    _I,
)
_SHORTENERS = re.compile(
    r"\b(?:bit\.ly|tinyurl|t\.co|goo\.gl|ow\.ly|is\.gd|buff\.ly|cutt\.ly|rb\.gy|shorturl|tiny\.cc|t\.me|wa\.me|"
    r"discord\.gg|discord(?:app)?\.com/invite|chat\.whatsapp|linktr\.ee|onlyfans|lnkd\.in)",
    _I,
)
_WORDLIKE_TLDS = {"it", "is", "in", "to", "me", "my", "no", "at", "be", "am", "us", "id", "one", "run", "win", "live",
                  "life", "work", "zone", "best", "cool", "news", "today", "world", "page", "help", "guide", "date",
                  "men", "party", "review", "trade", "market", "deals", "sale", "games", "chat", "space", "fun"}  # fmt: skip
_ABBREVIATIONS = {"e.g", "i.e", "a.m", "p.m", "u.s", "u.k", "vs.it", "no.it", "et.al", "o.k"}
_PROMO = [
    (
        "an invite to a channel or server",
        _rx(
            r"\b(?:join|add|follow|subscribe(?:\s+to)?|sub\s+to|check\s+out|visit|find|hit\s+me\s+up\s+on|dm\s+me\s+on|message\s+me\s+on|"
            r"contact\s+(?:me|us)\s+on|catch\s+me\s+on|watch\s+me\s+on|support\s+me\s+on|like\s+and\s+subscribe)\s+"
            r"(?:me\s+|us\s+)?(?:on\s+|in\s+|at\s+|to\s+)?(?:my|our)\s+(?:\w+\s+)?(?:discord|telegram|whatsapp|signal|twitch|youtube|yt|tiktok|"
            r"insta(?:gram)?|twitter|patreon|onlyfans|kik|snap(?:chat)?|channel|server|stream|page|group|shop|store|etsy|ebay|"
            r"blog|podcast|newsletter|site|website|substack|kickstarter|gofundme|ko-?fi)"
            r"|\b(?:discord|telegram|whatsapp)\s+(?:server|group|channel|invite|link|code)\s*(?::|is|-)\s*\S"
            r"|\b(?:like\s+(?:and|&)\s+)?subscribe\s+(?:to\s+)?(?:my|our)\b|\bsmash\s+(?:that|the)\s+(?:like|subscribe)"
            r"|\b(?:discord|telegram)\s*(?:\.|dot)\s*(?:gg|me)\b|\bdiscord\s+gg\b"
            r"|\bfree\s+(?:v-?bucks|robux|gift\s*cards?|skins|gems|diamonds|followers|steam\s+(?:keys|codes|wallet))|\b(?:v-?bucks|robux|gems|coins|followers|gift\s*card)\s+generator"
            r"|\bno\s+(?:survey|human\s+verification)\b"
            r"|\b(?:dm|message|msg|contact|find|add|follow|hit)\s+(?:me|us)\s+(?:up\s+)?(?:on|at|via)\s+(?:insta(?:gram)?|ig|twitter|x|tiktok|discord|telegram|whatsapp|snap(?:chat)?|fb|facebook|kik|signal|reddit|twitch|youtube)\b"
            r"|\b(?:insta(?:gram)?|ig|twitter|tiktok|telegram|snap(?:chat)?|discord|twitch|youtube|threads|bluesky)\s*(?::|is|at|-)?\s*@[\w.]{3,}"
            r"|\bfollow\s+@[\w.]{3,}|@[\w.]{3,}\s+on\s+(?:tiktok|insta(?:gram)?|twitter|x|youtube|twitch|telegram|snap(?:chat)?|threads|bluesky|facebook|discord)\b"
            r"|\bmy\s+(?:store|shop|business|company|channel|brand|stall|page)['’]?s?\s+(?:name\s+)?is\b|\bcheap\s+(?:\w+\s+){0,3}singles\b"
            r"|\bjoin\b[^.?!]{0,40}\bon\s+(?:telegram|discord|whatsapp|signal|kik)\b|\bgiveaway\b[^.?!]{0,40}@\w{3,}"
        ),
    ),
    (
        "crypto",
        _rx(
            r"\b(?:bitcoin|btc|ethereum|eth|crypto(?:currency|currencies)?|nfts?|airdrops?|usdt|tether|dogecoin|doge|solana|"
            r"shiba|memecoin|altcoin|defi|web3|presale|ico)\b|\b0x[0-9a-f]{40}\b|\b(?:bc1|[13])[a-hj-np-z0-9]{25,39}\b"
        ),
    ),
    (
        "SEO spam",
        _rx(
            r"\b(?:backlinks?|seo\s+(?:services?|agency|experts?|package)|search\s+engine\s+optimi[sz]ation|guest\s+posts?|"
            r"rank\s+(?:your|on)\s+(?:site|website|google)|(?:more|organic)\s+traffic\s+to\s+your|domain\s+authority|link\s+building)\b"
        ),
    ),
    (
        "an affiliate or promo code",
        _rx(
            r"\b(?:promo|discount|coupon|referral|affiliate|voucher|invite|bonus)\s+(?:code|link)s?\b|\buse\s+my\s+(?:referral\s+|promo\s+|discount\s+|creator\s+)?code\b"
            r"|\b\d{1,2}\s?%\s+off\b|\bref(?:erral)?\s*=\s*\w+|\baff(?:iliate)?_?id\b"
        ),
    ),
]
_REPEATED_CHAR = re.compile(r"([^\W\d_])\1{7,}")  # the same letter eight or more times in a row
_REPEATED_SYMBOL = re.compile(r"([^\w\s?!.…])\1{11,}")  # a symbol twelve or more times
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


def check_links(text: str) -> str | None:
    t = plain(text)
    compact = re.sub(r"\s+", "", t)
    if _URL_SCHEME.search(t) or re.search(r"(?:https?|hxxps?):/{1,2}\w|www\.[a-z0-9-]+\.[a-z]", compact):
        return "contains a link"
    if _SHORTENERS.search(t) or _SHORTENERS.search(compact):
        return "contains a short link or invite"
    if _BARE_DOMAIN_PATH.search(t):
        return "contains a web address"
    # an ASCII question is read as typed, so "combat.It says" (a missing space) keeps its capital
    for m in _BARE_DOMAIN.finditer(text if text.isascii() else t):
        if not _looks_like_abbreviation(m):
            return f"contains a web address ({m.group(0)})"
    for m in _SPELLED_DOMAIN.finditer(t):
        if not _is_english_point(m):
            return f"contains a disguised web address ({m.group(0)})"
    return None


# Top-level domains that are no English word: after "point" only these make a disguised address.
_CODE_TLDS = frozenset(
    {"com", "net", "org", "io", "co", "info", "biz", "ru", "cn", "de", "uk", "fr", "nl", "xyz", "ly", "gg", "tv",
     "cc", "su", "ws", "tk", "ml", "gq", "cf", "eu", "es", "pl", "se", "jp", "kr", "br", "mx", "ca", "au", "nz",
     "za", "ie", "ch", "icu", "ai", "onion"}
)  # fmt: skip


def _is_english_point(m: re.Match[str]) -> bool:
    # "every point is covered", "point by point", "the bar point to escape": "point" is a word of games
    # (backgammon points, victory points) as well as the French for a dot, so it only spells an address before
    # a top-level domain that is no English word ("freebies point com").
    sep = m.group("sep").strip().strip("()[]{}<>")
    return sep == "point" and m.group("tld") not in _CODE_TLDS


def _looks_like_abbreviation(m: re.Match[str]) -> bool:
    # "e.g.", "i.e." and the like are not domains; a domain label needs at least two characters, and a label
    # of digits only is a rule or version number ("5.1.co" never happens; "702.19b" is not matched at all).
    label, _, tld = m.group(0).partition(".")
    if len(label) < 2 or label.isdigit() or m.group(0).lower() in _ABBREVIATIONS:
        return True
    # "combat.It says", "turn.In": a sentence run into the next, capitalised word, is not a domain ("Cheap.Com"
    # still is: only top-level domains that are also English words get this benefit)
    return tld[:1].isupper() and tld[1:].islower() and tld.lower() in _WORDLIKE_TLDS


# A code to type at a checkout, read on the question as typed: "code FREEPOST", "coupon: SAVE20", "voucher
# DICE10" (a word in capitals, or letters with digits, after the word for a code).
_CODE_TOKEN = re.compile(
    r"\b(?i:code|coupon|voucher|promo|promocode|discount)\s*[:=-]?\s*[\"'“‘]?(?:(?=[A-Z0-9]*\d)[A-Z0-9]{4,}|[A-Z]{5,})\b"
)


def check_spam(text: str) -> str | None:
    t = plain(text)
    for reason, rx in _PROMO:
        if rx.search(t):
            return f"spam ({reason})"
    if _CODE_TOKEN.search(unicodedata.normalize("NFKC", text)):
        return "spam (an affiliate or promo code)"
    m = _REPEATED_CHAR.search(text) or _REPEATED_SYMBOL.search(text)
    if m:
        return f"repeated characters ({m.group(1)!r} x{len(m.group(0))})"
    words = [w.lower() for w in _WORD.findall(text)]
    run = 1
    for prev, cur in itertools.pairwise(words):
        run = run + 1 if cur == prev else 1
        if run >= 4 or (run >= 3 and len(cur) > 2 and cur not in {"very", "ha", "no", "far", "really"}):
            return f"repeated word ({cur!r} {run} times in a row)"
    long_words = [w for w in words if len(w) >= 3]
    if len(long_words) >= 8:
        word, count = Counter(long_words).most_common(1)[0]
        if count / len(long_words) > 0.4:
            return f"repeated word ({word!r} is {count} of {len(long_words)} words)"
    return None


# Off-topic advertising ------------------------------------------------------------------------------------

# Strong cues: one is enough. Weak cues: two are needed (a rules question may mention "buy" or "price").
_AD_STRONG = _rx(
    r"\b(?:competitive|affordable|reasonable|unbeatable|cheapest|lowest)\s+(?:rates|prices?|deals?|quotes?)\b|\b(?:great|best|low|cheap)\s+(?:rates|prices|deals|quotes)\b"
    r"|\b(?:free\s+(?:quotes?|estimates?|consultations?|trials?|delivery|shipping)|sponsored\s+by|brought\s+to\s+you\s+by|in\s+partnership\s+with|"
    r"(?:check\s+out|visit|buy\s+from|shop\s+at)\b[^.?!]{0,40}\bon\s+(?:ebay|etsy|amazon|vinted|depop|gumtree|craigslist|marketplace|tcgplayer|cardmarket)|no\s+obligation|no\s+win\s+no\s+fee)\b"
    r"|\b(?:now\s+hiring|we(?:'re|\s+are)\s+hiring|join\s+(?:my|our)\s+team|be\s+your\s+own\s+boss|work\s+from\s+home|"
    r"passive\s+income|side\s+hustle|earn\s+(?:\$|£|€)?\s?\d+|make\s+(?:\$|£|€)?\s?\d+\s*(?:k|\+)?\s*(?:a|per)\s+(?:day|week|month)|"
    r"make\s+money|financial\s+freedom|extra\s+income|mlm|network\s+marketing|business\s+opportunity|investment\s+opportunity|"
    r"guaranteed\s+(?:returns?|results|income)|get\s+rich|double\s+your\s+money)\b"
    r"|\b(?:limited[\s-]+time\s+offer|special\s+offer|order\s+(?:now|today)|buy\s+now|shop\s+now|book\s+(?:now|today|your)|"
    r"call\s+(?:us|now|today)|visit\s+(?:us|our)|open\s+24/?7|while\s+stocks?\s+last|act\s+now|don'?t\s+miss\s+out|"
    r"sign\s+up\s+(?:now|today)|enrol+\s+(?:now|today)|first\s+(?:order|lesson|session|month)\s+free|money[\s-]back\s+guarantee)\b"
    r"|\b(?:for\s+sale|on\s+sale\s+now|selling\s+(?:my|a|an|our|cheap)\s+(?!soul\b|\w+\s+(?:card|cards|item|items|loot|treasure)\b)|"
    r"(?:dm|message|pm)\s+(?:me|us)\s+(?:for\s+(?!a\s+(?:rules?|ruling|second))|if\s+(?:interested|you(?:'re|\s+are)?\s+(?:want|need|interested|keen))|to\s+(?:buy|order|book|get))|"
    r"inbox\s+(?:me|us)|whatsapp\s+(?:me|us)|text\s+(?:me|us)\s+(?:for|at|on))\b"
    r"|\b(?:our|my)\s+(?:restaurant|takeaway|shop|store|salon|agency|company|firm|clinic|gym|studio|bakery|cafe|bar|"
    r"pizzeria|business|services|products|range|menu|app|course|webinar|coaching)\b(?:\s+\w+){0,6}\s+(?:offers?|is\s+open|now|has|delivers?|opens?|sells?|today|near|in\s+town)"
    r"|\b(?:(?:now\s+)?taking\s+(?:on\s+)?(?:new\s+)?(?:clients|customers|bookings|orders|students|commissions|patients)|\d+\+?\s+years['’]?\s+(?:of\s+)?experience|"
    r"family[\s-]+(?:run|owned)|established\s+(?:in\s+)?(?:19|20)\d\d|no\s+call[\s-]?out\s+(?:fee|charge)|24/7|24\s+hours\s+a\s+day|"
    r"best\s+[\w\s]{1,20}\s+in\s+(?:town|the\s+city|the\s+area|(?-i:[A-Z][a-z]+))|\d\s+for\s+\d\s+(?:on|every|all|deals?)|buy\s+one\s+get\s+one|bogof|happy\s+hour|buy\s+(?:cheap\s+|real\s+|more\s+)?(?:\w+\s+)?(?:followers|likes|views|subscribers|reviews|upvotes|accounts)|everything\s+must\s+go|"
    r"(?:garage|yard|car\s+boot|boot|estate|clearance|closing[\s-]down)\s+sale|save\s+(?:hundreds|thousands|big|up\s+to|\d+\s?%|£|\$|€)|"
    r"speak\s+to\s+(?:an?\s+|our\s+)?(?:adviser|advisor|expert|specialist|agent|consultant|broker)|record\s+lows?|hit\s+me\s+up|"
    r"follow\s+(?:me|us)\s+(?:for|on)|compare\s+(?:prices|quotes|deals|with)|(?:mortgage|insurance|loan|finance|credit)\s+(?:rates|quotes|deals|renewal|broker|advice)|"
    r"(?:need|looking\s+for|want)\s+an?\s+(?:new\s+)?(?:plumber|electrician|builder|accountant|lawyer|solicitor|website|web\s+designer|cleaner|"
    r"photographer|dj|tutor|mechanic|roofer|locksmith|gardener|handyman|painter|decorator|cleaner|babysitter|personal\s+trainer|loan|mortgage)|"
    r"(?:cheap|fast|quick|affordable)\s+(?:and|&)\s+(?:fast|cheap|reliable|friendly|easy)|dates\s+(?:free|available)|"
    r"(?:daily|weekly|free)\s+(?:fitness|diet|trading|investing|money|crypto|marketing)\s+tips|"
    r"dm\s+(?:me\s+|us\s+)?for\s+(?:prices?|details|info|more|rates|orders|a\s+quote)|(?:cheap|replica|fake|designer)\s+(?:rolex|watches|handbags|bags|sunglasses|sneakers|jerseys)|"
    r"(?:hot|lonely|sexy|horny|local)\s+(?:singles|girls|women|milfs|moms|men)|singles\s+(?:near\s+you|in\s+your\s+area)|"
    r"forex|binary\s+options|trading\s+signals|\d{2,4}\s?%\s+(?:returns?|profit|roi|gains?)|returns?\s+guaranteed|"
    r"[£$€]\s?\d+(?:[.,]\d\d)?\s+(?:a|per|each|for\s+a)\s+(?:bottle|jar|box|pack|bag|piece|item|unit|hour|session|lesson|night|month|week|kilo|kg|dozen|set)|"
    r"(?:everyone\s+)?buy\s+my\s+(?:homemade|handmade|home-made|new|own|\w+\s+)?(?:\w+\s+)?(?:sauce|jam|candles|soap|art|prints|book|ebook|album|music|course|merch|t-shirts|shirts|jewellery|jewelry|cookies|cakes|dice|minis|products?)|"
    r"\b24\s?h(?:r|rs|our|ours)?\s+(?:delivery|service|turnaround|dispatch)|(?:essay|homework|assignment|dissertation)\s+(?:writing|help|service)|"
    r"(?:writing|cleaning|repair|removals?|printing|web\s+design|marketing|tutoring|moving|dog\s+walking|babysitting|catering|plumbing|roofing)\s+services?\b|"
    r"no\s+credit\s+checks?|same[\s-]day\s+(?:loans?|cash|payouts?|service|delivery|appointments?)|fully\s+(?:insured|licensed|licenced|qualified|certified|accredited)|"
    r"instant\s+(?:valuation|quote|approval|cash|payout|decision)|free\s+valuation|we\s+buy\s+(?:any|all|your|gold|houses|cars)|"
    r"cash\s+(?:fast|in\s+\d+\s+(?:hours|minutes|days)|for\s+(?:cars|gold|houses|your))|need\s+(?:cash|money|a\s+loan)\s+(?:fast|now|today|quickly)|"
    r"(?:looking\s+for|need|want)\s+an?\s+(?:reliable|good|cheap|local|trusted|professional|friendly|affordable|experienced)\s+\w+|"
    r"make\s+(?:me\s+)?an\s+offer|barely\s+used|(?:brand\s+new|like\s+new)\s*,?\s+(?:never|still|boxed|unopened)|delivered\s+to\s+your\s+door|"
    r"(?:first|1st)\s+(?:lesson|session|class|visit|month|consultation)\s+(?:is\s+)?(?:free|half\s+price|\d+\s?%\s+off))\b"
    r"|[£$€]\s?\d+(?:[.,]\d\d)?\s*(?:a\s+|per\s+|each\s+|for\s+a\s+|/\s*)(?:session|lesson|hour|hr|h|class|game\s+night|seat|player|month|week|night|day|bottle|box|pack)\b"
    r"|\bno\s+experience\s+(?:needed|required|necessary)|\bremote\s+(?:jobs?|work|data\s+entry|positions?)|\bdata\s+entry\s+(?:jobs?|work|positions?)?\b"
    r"|\b(?:with|using|via|through)\s+my\s+(?:referral|ref|invite|affiliate)\b|\bsign(?:ing)?\s+up\s+(?:with|using|through)\s+my\b"
    r"|\b(?:fake|forged|counterfeit|novelty)\s+(?:ids?|passports?|documents|diplomas|degrees|licen[cs]es|money|notes|bills|banknotes)\b|\b(?:fast|worldwide|discreet|express)\s+shipping\b"
    r"|\b(?:envio\s+gratis|ofertas?\s+(?:increibles|especiales|unicas)|precios?\s+(?:bajos|increibles|imbatibles)|escribeme|llamanos|"
    r"livraison\s+gratuite|prix\s+(?:imbattables|bas|casses)|vente\s+de|a\s+vendre|contactez(?:-|\s)nous|"
    r"gunstige?|jetzt\s+(?:anfragen|bestellen|kaufen|buchen)|versandkostenfrei|sonderangebot|kredite?\s+ohne|"
    r"spedizione\s+gratuita|prezzi\s+bassi|offerta\s+speciale|frete\s+gratis|promocao)\b"
    r"|\b(?:sell|buy|selling|buying)\s+(?:me\s+)?(?:your|my|their|old|aged|cheap)\s+(?:\w+\s+)?(?:accounts?|logins?)\b"
    r"|\b(?:lose\s+weight\s+(?:fast|quickly|now|today)|burn\s+fat\s+(?:fast|quickly)|keto\s+(?:gummies|pills|diet\s+pills)|(?:cbd|diet|slimming)\s+gummies|"
    r"free\s+(?:iphone|ipad|macbook|ps5|playstation|xbox|switch|samsung|gift\s*cards?|airpods)\b|enter\s+your\s+(?:card|bank|credit\s+card|payment)\s+(?:details|number|info))"
    r"|\b(?:weight\s+loss|lose\s+\d+\s*(?:kg|lbs?|pounds)|diet\s+pills|male\s+enhancement|viagra|cialis|payday\s+loans?|"
    r"casino\s+bonus|sports\s+betting|free\s+spins|escort|hookup|singles\s+in\s+your\s+area|cheap\s+flights|replica\s+watches)\b"
)
# A business's name, read on the question as typed: "Dave's Plumbing", "Harbour Finance", "Tony's Kebabs"
_BUSINESS_NAME = re.compile(
    r"\b[A-Z][\w'’]+(?:\s+[A-Z][\w'’]+){0,2}\s+(?:Plumbing|Kebabs?|Pizza|Pizzeria|Pest\s+Control|Finance|Insurance|Motors|Cars|Cleaning|"
    r"Services|Solutions|Consulting|Ltd|LLC|Inc|Bakery|Salon|Electrical|Roofing|Removals|Taxis|Catering|Fitness|Dental|Realty|Estates|"
    r"Lettings|Garage|Builders|Landscaping|Accountants|Solicitors|Properties|Logistics|Marketing|Media|Tattoo|Barbers|Nails|Spa)\b"
)
_AD_WEAK = _rx(
    r"\b(?:buy|sell|selling|sale|order|delivery|delivered|deliver|discount|deal|deals|offer|offers|price|prices|"
    r"priced|cheap|affordable|rates|quote|hire|hiring|apply|vacancy|vacancies|salary|per\s+hour|/hr|customers?|clients?|"
    r"shop|store|restaurant|takeaway|menu|pizza|kebab|curry|burgers?|sushi|mileage|miles\s+on|mot|warranty|"
    r"service|services|business|brand|products?|course|lessons?|coaching|book|booking|appointment|contact|"
    r"call|dm|message\s+me|whatsapp|location|located|town|city|area|near\s+you|local|open|opening|available|"
    r"professional|experienced|quality|guaranteed|free|bonus|visit|today|now|only|£|\$|€|\d+\s*(?:usd|eur|gbp|quid|bucks))\b"
)
_GAME_WORDS = _rx(
    r"\b(?:roll|rolls|dice|die|d\d+|turn|turns|round|rounds|card|cards|deck|hand|tableau|foundation|stock|waste\s+pile|"
    r"checker|checkers|bar|bear\s+off|pip|double|cube|spell|spells|attack|damage|hit\s+points|hp|ac|saving\s+throw|save|"
    r"character|creature|monster|player|players|dm|gm|rule|rules|rulebook|move|moves|action|bonus\s+action|level|class|"
    r"aspect|fate\s+points?|stress|consequence|crew|heat|score|scores|game|mana|land|creature|stack|combat|initiative|"
    # money and goods inside the game: a price in gold pieces is the game's
    r"gp|sp|cp|pp|gold|silver|copper|coins?|gold\s+pieces|credits|potions?|magic\s+items?|items?|weapons?|armou?r|swords?|"
    r"loot|treasure|shopkeeper|merchant|npc|downtime|party|campaign|session|pc|character's|sheet|shields?|wands?|scrolls?|"
    r"rings?|equipment|gear|book|books|rulebook|phb|srd|dmg|errata)\b"
)


# A sales post without a link or a shop's name is still built from a few recognisable parts: someone offering
# goods or services, how they are made, what they cost in real money, how they are delivered, how to order,
# what condition they are in, and a push to buy now. A rules question may hold one of these parts ("I sell the
# loot to a fence", "is a near-mint foil legal?", "the $5 entry fee"); an offer holds two or more.
_NUMBER_WORD = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|a\s+few|a\s+couple\s+of)"
_OFFER_PARTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "an offer",
        _rx(
            # first person selling or offering something other than a thing in the game ("I sell the loot"), said
            # as a fact, not asked ("can I sell magic items back?", "if we sell the ship")
            r"(?<!can\s)(?<!could\s)(?<!may\s)(?<!if\s)(?<!when\s)(?<!do\s)(?<!should\s)(?<!would\s)(?<!will\s)"
            r"(?<!must\s)(?<!might\s)(?<!shall\s)(?<!once\s)(?<!after\s)(?<!before\s)(?<!until\s)(?<!unless\s)"
            r"\b(?:i|we)(?:'m|\s+am|'re|\s+are)?\s+(?:now\s+|also\s+|currently\s+)?(?:sell|selling|offer|offering|flogging|shifting|"
            r"clearing\s+out|getting\s+rid\s+of|looking\s+to\s+(?:sell|trade|buy)|wanting\s+to\s+sell|want\s+to\s+sell|trading|"
            r"(?:do|take|accept)\s+commissions|(?:run|own|have|manage)\s+(?:a|an|my\s+own|our\s+own)\s+(?:\w+\s+){0,3}?"
            r"(?:shop|store|cafe|café|business|company|stall|studio|brand|bakery|pub|bar))\b"
            r"(?!\s+(?:the|it|them|this|that|these|those|him|her|to|a\s+bribe|an?\s+(?:npc|guard|merchant))\b)"
            r"|\b(?:for\s+(?:hire|sale|trade)|commissions?\s+(?:are\s+)?(?:open|available|slots?)|slots?\s+(?:open|available|left)|"
            r"taking\s+(?:on\s+)?(?:commissions|orders|clients|bookings|students|pre-?orders)|pre-?orders?\s+(?:open|now)|"
            r"paid\s+(?:games?|sessions?|one-?shots?|campaigns?|coaching|lessons?|tables?)|(?:rates|fees|prices)\s+(?:start|from)|"
            r"price\s+list|(?:my|our)\s+(?:new\s+|latest\s+|full\s+|online\s+)?(?:etsy|ebay|shop|store|stall|business|range|stock|catalogue|catalog|collection\s+of\s+\w+\s+for\s+sale)"
            r"|(?:trade|trading|swap|swapping)\s+(?:you\s+)?my\s+\w+(?:\s+\w+){0,3}\s+for\s+(?:your|cash|money|paypal)|(?:board\s+game|gaming|game)\s+(?:cafe|café|bar|pub|shop|store)\s+(?:is\s+)?(?:open|with|now))\b"
        ),
    ),
    (
        "handmade goods",
        _rx(
            r"\b(?:i|we)\s+(?:make|hand-?make|craft|carve|cast|sculpt|3d[\s-]?print|print|paint|sew|knit|build|design|engrave|"
            r"forge|turn|bind|brew)\s+(?:(?:my\s+own|custom|bespoke|unique|personali[sz]ed|beautiful|quality|\w+)\s+){0,3}"
            r"(?:dice|boards?|trays?|towers?|boxes|mats?|playmats?|sleeves|tokens|terrain|minis|miniatures|maps|jewell?ery|"
            r"candles|prints|shirts|t-?shirts|bags|pouches|binders|cases|decks|sets|figures|models|art|portraits)\b"
            r"|\b(?:hand-?made|hand-?crafted|hand-?painted|hand-?carved|hand-?turned|bespoke|made\s+to\s+order|personali[sz]ed|"
            r"(?:hand-?|laser-?)?engraved|(?:any|in\s+any|your\s+choice\s+of|choose\s+your|pick\s+your)\s+(?:colou?rs?|size|design|name|wood|finish)"
            r"|custom(?:-made)?\s+(?:\w+\s+){0,2}(?:dice|pouches|bags|trays|towers|boxes|mats|playmats|sleeves|tokens|terrain|minis|miniatures|"
            r"maps|boards|portraits|art|commissions|orders))\b"
        ),
    ),
    (
        "a price in money",
        _rx(
            rf"[£$€¥]\s?\d|\b\d+(?:[.,]\d+)?\s*(?:k\s+)?(?:dollars?|bucks|quid|euros?|usd|eur|gbp|cad|aud|nzd|pesos|rupees|yen)\b"
            rf"|\b{_NUMBER_WORD}\s+(?:dollars|bucks|quid|euros|pounds\s+(?:a|each|per|for))\b"
            r"|\b(?:cheaper|lower|less)\s+than\s+(?:any|the|most|all|every|other|your\s+local)\s+(?:\w+\s+)?(?:stores?|shops?|retailers?|"
            r"websites?|sites?|lgs|market|sellers?|dealers?|retail)\b|\b(?:below|under|beneath)\s+(?:market|retail|rrp|msrp|tcg\s*player|"
            r"cardmarket|store)\s*(?:price|value)?\b|\bhalf\s+(?:price|off)\b|\b(?:or\s+best\s+offer|obo|ono|firm\s+price)\b"
            r"|\bprice\s+(?:drop|reduced|cut)\b|\b(?:only|just)\s+\d+\s*(?:each|a\s+piece|a\s+set|per\s+set)\b"
            r"|\b\d{1,2}\s?%\s+(?:off|discount)|\b(?:student|member|members'?|loyalty|bulk|trade)\s+discounts?\b|\bdiscounts?\s+(?:for|on)\s+(?:all|every|students|members|orders|bulk)"
            r"|\b(?:going\s+cheap|for\s+cheap|cheap\s+as\s+chips)\b|\bcheap\s*(?:[,!]|$)|\beverything\s+(?:half\s+price|reduced|must\s+go)|\b(?:flash|summer|winter|big|huge)\s+(?:sale|deal)s?\b"
            r"|\bwe\s+have\s+a\s+sale\b|\bpaying\s+(?:cash|top\s+price|good\s+money)\b"
        ),
    ),
    (
        "delivery",
        _rx(
            r"\b(?:shipping|postage|p\s?&\s?p|ships\s+(?:worldwide|free|fast|same|next|within|from|to\s+(?:the\s+)?(?:us|uk|eu|anywhere))|"
            r"worldwide|free\s+delivery|(?:next|same)[\s-]day\s+(?:delivery|dispatch)|dispatch(?:ed)?\s+(?:in|within|same)|in\s+stock|"
            r"ready\s+to\s+ship|collection\s+only|local\s+pick-?up|(?:on|with)\s+(?:every|each|any|all|your\s+(?:first|next))\s+orders?|"
            r"at\s+checkout|orders?\s+(?:over|above)\s+\S+|(?:the\s+)?first\s+\d+\s+(?:orders|customers|buyers|people\s+to\s+order))\b"
        ),
    ),
    (
        "a call to buy",
        _rx(
            r"\b(?:dm|pm|message|msg|inbox|text|ping|email|e-?mail|contact|whatsapp|hmu)\s+(?:me|us)\b(?!\s+(?:about\s+the\s+rules?|if\s+i'?m\s+wrong))"
            r"|\bhit\s+(?:me|us)\s+up\b|\bget\s+in\s+touch\b|\bask\s+me\s+how\b|\b(?:order|buy|get\s+(?:one|some|yours))\s+from\s+(?:me|us)\b"
            r"|\breply\s+with\s+your\b|\bserious\s+(?:offers|buyers|enquiries|inquiries)\b|\boffers?\s+(?:welcome|considered|accepted)\b"
            r"|\bfirst\s+come,?\s+first\s+served\b|\b(?:grab|get|order|claim|reserve)\s+yours\b|\bcome\s+(?:and\s+)?(?:try|visit|see)\s+(?:it|us)\b"
            r"|\b(?:interested|anyone\s+interested)\s*\?\s*(?:dm|pm|message|text)\b|\bwho\s+wants\s+(?:one|some)\b"
            r"|\b(?:dm|pm|message|msg|text)\s+(?:me\s+)?if\s+(?:interested|keen|you\s+want)|\breach\s+out\b|\bwalk-?ins\s+welcome\b"
            r"|\b(?:come|pop|drop|call)\s+(?:in|by|along|down|round)\b(?!\s+(?:to\s+)?(?:the|a|an|this|that|my|his|her|their|next)\s+(?:rules?|turn|round|phase|step|stack|battlefield|table))"
            r"|\b(?:grab|get|order|claim|book)\s+your\s+(?:\w+\s+){0,3}(?:today|now|here|before)\b|\bgrab\s+your\b|\bask\s+(?:me\s+|us\s+)?for\s+(?:details|prices?|rates|a\s+quote)\b"
            r"|\banyone\s+(?:want|interested)\b[^.?!]{0,40}(?:\?|$)"
        ),
    ),
    (
        "the goods' condition",
        _rx(
            r"\b(?:near[\s-]mint|nm(?:/m)?|lightly\s+played|moderately\s+played|mint\s+condition|(?:good|great|excellent|perfect)\s+condition|"
            r"never\s+(?:used|played|opened)|unopened|barely\s+used|like\s+new|still\s+(?:boxed|sealed|in\s+(?:the\s+)?(?:box|shrink|cellophane))|"
            r"graded|psa\s*\d+|bgs\s*\d+)\b"
        ),
    ),
    (
        "opening hours",
        _rx(
            r"\b(?:open|opening\s+hours|hours)\s*:?\s+(?:from\s+)?(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*\.?\s*(?:-|–|to|till|until|thru|through)\s*"
            r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*|\d{1,2}(?::\d\d)?\s*(?:am|pm)?\s*(?:-|–|to|till|until|til)\s*\d{1,2}(?::\d\d)?\s*(?:am|pm)?|"
            r"(?:every\s+day|daily|7\s+days|seven\s+days|late|24\s*/\s*7|all\s+week))"
            r"|\bopen\s+(?:till|until|til|from)\s+\d"
        ),
    ),
    (
        "a push to buy now",
        _rx(
            r"\b(?:limited\s+(?:time|stock|edition|offer|run)|hurry|act\s+(?:fast|quick(?:ly)?)|today\s+only|this\s+week\s+only|"
            r"while\s+(?:stocks?|supplies)\s+last|last\s+(?:few|chance)|only\s+\d+\s+left|(?:selling|going)\s+fast|won'?t\s+last|"
            r"before\s+(?:they'?re|it'?s)\s+gone|ends\s+(?:soon|tonight|today|tomorrow|sunday|friday)|don'?t\s+miss|"
            r"(?:great|perfect|ideal|lovely|unique)\s+(?:gift|present|stocking\s+filler)s?|gift\s+idea|(?:this|next)\s+(?:week|weekend|month)\s+only|"
            r"(?:available|in\s+stores?|on\s+sale|out)\s+(?:now|today)|now\s+(?:available|in\s+stock|on\s+sale)|back\s+in\s+stock|"
            r"free\s+(?:demo|demos|tasting|sample|samples|gift|consultation)s?)\b"
        ),
    ),
)
# Marketplace shorthand: want to sell / buy / trade.
_MARKET_SHORTHAND = re.compile(r"(?<![\w-])(?:wts|wtb|wtt|wts/t|wtt/s)(?![\w-])", _I)


def _offer_parts(t: str) -> list[str]:
    return [name for name, rx in _OFFER_PARTS if rx.search(t)]


def check_advertising(text: str) -> str | None:
    t = plain(text)
    if _AD_STRONG.search(t) or _BUSINESS_NAME.search(text) or _MARKET_SHORTHAND.search(t):
        return "off-topic advertising"
    parts = _offer_parts(t)
    if len(parts) >= 2:
        return f"off-topic advertising ({' + '.join(parts)})"
    game = {m.group(0).lower() for m in _GAME_WORDS.finditer(t)}
    # a word on both lists ("dm", "book") is the game's here: the dungeon master, the rulebook
    weak = {m.group(0).lower() for m in _AD_WEAK.finditer(t)} - game
    if len(weak) >= 4 and len(weak) > len(game) + 1:
        return "off-topic advertising (sales talk)"
    return None


# Profanity and slurs ---------------------------------------------------------------------------------------

_ENDINGS = ("", "s", "es", "ed", "ing", "in", "er", "ers", "y", "ies", "z")


def _inflections(term: str) -> set[str]:
    """A listed word with the usual English endings, spelled as English spells them: "pussy" -> "pussies",
    "wank" -> "wanking", "douche" -> "douching" (a plain suffix alone would give "pussyies")."""
    forms = {term + end for end in _ENDINGS}
    if len(term) > 3 and term.endswith("y") and term[-2] not in "aeiou":
        forms |= {term[:-1] + end for end in ("ies", "ied", "ier", "iest")}
    if len(term) > 3 and term.endswith("e"):
        forms |= {term[:-1] + end for end in ("ing", "in", "ed", "er", "ers")}
    return forms


_SCRIPT_TERMS = tuple(plain(w, lookalikes=False) for w in lexicon.PROFANITY_SCRIPT)
_TOKENS = re.compile(r"[\w*#@$!%?.'’-]+")
_MASK = re.compile(r"[*#%?_.]|\W")


def _stretchable(term: str) -> re.Pattern[str]:
    """ "nigga" -> n+i+g{2,}a+: stretched letters match, but a doubled letter stays doubled ("minigame" is not
    "nigga" squeezed)."""
    return re.compile(
        "".join(f"{re.escape(m.group(1))}{{{len(m.group(0))},}}" for m in re.finditer(r"(.)\1*", term))
    )


def _word_list(entries: dict[str, str]) -> tuple[dict[str, str], list[str], list[re.Pattern[str]]]:
    words: dict[str, str] = {}
    prefixes: list[str] = []
    anywhere: list[re.Pattern[str]] = []
    for term, mode in entries.items():
        sq = squeeze(term)
        if mode == "any":
            anywhere.append(_stretchable(term))
        elif mode == "prefix":
            prefixes.append(sq)
        else:
            # shortest first: "nudes" and "nudees" squeeze alike, and the spelling kept must be the real one
            for form in sorted(_inflections(term), key=lambda f: (len(f), f)):
                words.setdefault(squeeze(form), form)
    return words, prefixes, anywhere


_SLUR_LIST = _word_list(lexicon.SLURS)
# Listed compounds that are two ordinary words when spaced apart ("shit head", "dumb ass")
_COMPOUNDS = tuple(
    squeeze(t)
    for t, mode in {**lexicon.SLURS, **lexicon.PROFANITY}.items()
    if mode in ("any", "prefix") and len(t) >= 6
)
_PROFANE_LIST = _word_list(lexicon.PROFANITY)
# Every whole word a masked token could stand for ("f*ck" -> fuck, "r*tards" -> retards)
_MASKABLE = sorted(
    {
        squeeze(form)
        for t in list(lexicon.SLURS) + list(lexicon.PROFANITY)
        if len(t) >= 3 and t.isascii()
        for form in _inflections(t)
    }
)
# Names of cards, monsters and places that contain a listed word ("Cockatrice", "Scunthorpe" never reach the
# prefix rule: they do not start with it; these do): whole words that are never profanity.
_INNOCENT = {
    squeeze(w)
    for w in (
        "cocktail", "cockatrice", "cockpit", "cockroach", "cocky", "shittim", "dickens", "dickensian",
        "peacock", "hancock", "woodcock", "shuttlecock", "gamecock", "cocked", "cocking", "pissarro", "titter",
        "bitchute", "prickly", "pricked", "pricking", "prickle", "dicker", "dickering", "dickey", "dicky", "cumin",
        "cumbersome", "cumulative", "cum", "scrap", "spick", "coons", "shitake", "shiitake", "wankel",
        "slutty", "analyst", "assassin", "assassinate", "assassins", "assess", "bass", "mass", "pass", "class",
        "harass", "cockscomb", "dyked",
    )
}  # fmt: skip


def _listed(raw: str, lists: tuple[dict[str, str], list[str], list[re.Pattern[str]]]) -> str | None:
    words, prefixes, anywhere = lists
    word = squeeze(raw)
    if word in _INNOCENT:
        return None
    if word in words and _stretchable(words[word]).fullmatch(raw.lower()):  # "CON" is not "coon"
        return words[word]
    for p in prefixes:
        if word.startswith(p):
            return p
    for rx in anywhere:
        if rx.search(raw):
            return rx.pattern
    return None


def _masked_match(token: str) -> str | None:
    """ "f*ck", "sh#t", "n*gger", "f**king", "c.u.n.t" with a letter hidden: the listed word it stands for."""
    core = token.strip("'’.,!?-")
    masked_inside = len(core) > 2 and bool(_MASK.search(core[1:-1]))
    if len(core) < 3 or not (masked_inside or core.endswith(("*", "#"))):
        return None
    letters = sum(ch.isalpha() for ch in core)
    if letters < 2 or not core[0].isalpha():
        return None
    parts = []
    for run in re.finditer(r"[^\W\d_]+|[*#%?_.\W]+", core):
        s = run.group(0)
        if s[0].isalpha():
            parts.append("".join(re.escape(ch) + "+" for ch in squeeze(s)))
        else:
            parts.append(f"[a-z]{{1,{len(s) + 1}}}")
    rx = re.compile("".join(parts) + "$")
    for word in _MASKABLE:
        if rx.match(word):
            return word
    return None


def _unvowel(token: str) -> list[str]:
    """A mask that hides vowels, filled in: "sh*tstain" -> "shitstain", "c*nt" -> "cant", "cent", "cunt"..."""
    runs = list(re.finditer(r"[*#%?_.]+", token))
    if not runs or len(runs) > 2 or sum(len(r.group(0)) for r in runs) > 2:
        return []
    fills = [["".join(p) for p in itertools.product("aeiou", repeat=len(r.group(0)))] for r in runs]
    out = []
    for choice in itertools.product(*fills):
        word, last = [], 0
        for run, fill in zip(runs, choice, strict=True):
            word += [token[last : run.start()], fill]
            last = run.end()
        out.append("".join([*word, token[last:]]))
    return out


def _profane_words(text: str) -> tuple[str, str] | None:
    """(kind, word) for the first slur or profanity in the text, after undoing its disguises."""
    for variant in (plain(text), unmasked(text), unmasked(text, keep_articles=True)):
        for raw in _TOKENS.findall(variant):
            core = raw.strip("'’.,!?-")
            word = core.strip("*#_%")  # _listed squeezes ("fuuuck") where that is safe
            candidates = [word, *re.split(r"[.'’_-]+", word)]
            if "v" in word:  # "fvck"
                candidates.append(word.replace("v", "u"))
            if any(ch in core for ch in "*#%?_."):
                candidates += _unvowel(core)
            for piece in candidates:
                if not piece:
                    continue
                if _listed(piece, _SLUR_LIST):
                    return "slur", piece
                if _listed(piece, _PROFANE_LIST):
                    return "profanity", piece
            if any(ch in raw for ch in "*#%?_.") or any(ch in raw[1:-1] for ch in "@$!"):
                masked = _masked_match(raw)
                if masked:
                    return "masked profanity", masked
        # "shit head", "dumb ass", "mother fucker": two words that make one listed compound
        words = [squeeze(w.strip("'’.,!?*#-_%")) for w in _TOKENS.findall(variant)]
        for a, b in itertools.pairwise(words):
            joined = a + b
            listed = any(joined.startswith(x) for x in _COMPOUNDS)
            if listed and len(a) > 1 and len(b) > 1 and joined not in _INNOCENT:
                return "profanity", joined
    script = plain(text, lookalikes=False)
    for term in _SCRIPT_TERMS:
        if term in script:
            return "profanity", term
    return None


def check_profanity(text: str) -> str | None:
    found = _profane_words(text)
    if found:
        kind, _word = found
        return f"{kind} (a listed word)"
    return None


_UNSEEN = re.compile(
    r"\b(?:"
    + "|".join(re.escape(w) for w in sorted(lexicon.MILD + lexicon.GAME_VIOLENCE, key=len, reverse=True))
    + r")\b",
    _I,
)


_SELF = re.compile(
    r"\b(?:i'?m|i\s+am|am\s+i|i\s+was|was\s+i|i\s+feel\s+like|call\s+me)\s+(?:such\s+|so\s+)?(?:an?\s+)?"
    r"(?:total\s+|complete\s+|absolute\s+|huge\s+)?(?:idiot|moron|dummy|dumbass|dork|noob|fool|clown|doofus|numpty|muppet)\b",
    _I,
)


def classifier_text(text: str) -> str:
    """What the profanity classifier reads: the text with its disguises undone, less the mild swearing, the
    game violence and the player calling themself an idiot, which it would mistake for abuse (insults aimed at
    others are the harassment rules' business)."""
    return re.sub(r"\s+", " ", _UNSEEN.sub(" ", _SELF.sub(" ", unmasked(text)))).strip()


# Harassment: an insult or a threat aimed at a person --------------------------------------------------------

_INSULT = r"(?:" + "|".join(re.escape(w) for w in sorted(lexicon.INSULTS, key=len, reverse=True)) + r")"
_INSULT_YOU = (
    r"(?:" + "|".join(re.escape(w) for w in sorted(lexicon.INSULTS_YOU, key=len, reverse=True)) + r")"
)
_PEOPLE = (
    r"(?:dm|gm|game\s*master|dungeon\s*master|judge|mod|mods|moderator|moderators|admin|admins|referee|ref|streamer|host|"
    r"organi[sz]er|owner|player|players|opponent|opponents|friend|friends|brother|sister|wife|husband|boyfriend|girlfriend|"
    r"partner|roommate|flatmate|cousin|son|daughter|mum|mom|dad|guy|guys|kid|kids|dude|dudes|man|woman|girl|boy|"
    r"people|person|staff|designer|designers|dev|devs|developer|developers|author|writer|teammate|teammates|neighbou?r|"
    r"boss|coworker|colleague|group|table|bunch|lot|crowd|community|fanboys?|fans|nerds|women|men|teacher|coach)"
)
# A whole audience addressed at once: "all of you", "the lot of you", "every one of you reading this".
_YOU_ALL = (
    r"(?:(?:all|each|both|most|half|the\s+(?:whole\s+)?lot|the\s+rest|(?:every|each)\s+(?:last\s+|single\s+)?(?:one|man|person))\s+of\s+(?:you|ya|yous|y'?all)"
    r"|you\s+(?:lot|all|guys|people|lads|folks|two|three|clowns)|y'?all|everyone\s+(?:reading\s+this|on\s+(?:this|here))"
    r"|(?:every|any)one\s+who\s+(?:uses|reads|posts\s+on|asks\s+on)\s+(?:this|here))"
)
_TARGET = (
    rf"(?:you|u|ya|ye|y'?all|you\s+guys|you\s+all|you\s+people|he|she|they|him|her|them|this\s+{_PEOPLE}|that\s+{_PEOPLE}|"
    rf"these\s+{_PEOPLE}|those\s+{_PEOPLE}|our\s+{_PEOPLE}|my\s+{_PEOPLE}|the\s+{_PEOPLE}|your\s+{_PEOPLE}|his\s+{_PEOPLE}|"
    rf"her\s+{_PEOPLE}|their\s+{_PEOPLE}|every(?:one|body)\s+(?:here|in\s+(?:this\s+|the\s+|my\s+|our\s+)?\w+)|{_YOU_ALL}|(?-i:[A-Z][a-z]{{2,}})(?:\s+(?-i:[A-Z][a-z]+))?)"
)
_INTENS = r"(?:(?:bunch\s+of|pack\s+of|load\s+of|lot\s+of|sad|such|a|an|the|so|total|complete|absolute|utter|real|fucking|fkn|effing|bloody|literal|literally|massive|huge|giant|big|little|pathetic|stupid|dumb|useless|worthless|ugly|fat|clueless|lazy|actual|certified|brain-?dead|rules-?lawyering|cheating|lying)\s+){0,4}"
_BE = r"(?:is|are|was|were|'s|'re|’s|’re|s|re|be|being|been|=|acts?\s+like|acting\s+like|sounds?\s+like|looks?\s+like|seems?\s+like|seem|seems|must\s+be|has\s+to\s+be|can\s+only\s+be)"
# Between a person and what is said of them: "Mike the judge at FNM is", "the guy who wrote this ruling is"
# (not "my friend says this rule is": reported speech about a thing is not aimed at a person).
_GAP = r"(?:[\s,]+(?!(?:this|that|it|which|says?|said|thinks?|thought|reckons?|claims?|told|feels?|agrees?|if|when|whether)\b)[\w'’-]+){0,7}?"
_BE_AFTER = rf"(?:\s*(?:'s|'re|’s|’re)|\s+{_BE})"
_HARASS = [
    (
        "an insult aimed at a person",
        _rx(rf"\b{_TARGET}{_GAP}{_BE_AFTER}\s+(?:[\w'’-]+[\s,]+){{0,4}}?{_INSULT}\b"),
    ),
    (
        "an insult aimed at a person",
        _rx(
            rf"\b(?:he|she|they|him|her|them|(?-i:[A-Z][a-z]{{2,}}))\s+(?:plays|acts|behaves|looks|thinks|talks|smells|argues|rules|runs\s+\w+)\s+(?:\w+\s+){{0,3}}like\s+an?\s+(?:[\w-]+\s+){{0,2}}(?:{_INSULT}|animal|child|toddler|baby)\b"
        ),
    ),
    (
        "an insult aimed at a person",
        _rx(
            rf"\b(?:you|u|ya|ur|you're|youre|your|you\s+are|ur\s+a|you\s+r)(?:\s+(?:lot|lads|guys|all|people|two|lads|folks))?\s+{_BE}?\s*{_INTENS}(?:{_INSULT}|{_INSULT_YOU})s?\b"
        ),
    ),
    (
        "an insult aimed at a person",
        _rx(
            rf"\b(?:what|such)\s+(?:an?\s+)?{_INTENS}{_INSULT}\b|\b(?:bunch|pack|lot|group|table|room|club|load)\s+(?:full\s+)?of\s+{_INTENS}{_INSULT}"
        ),
    ),
    (
        "an insult aimed at a person",
        _rx(
            rf"\b{_INSULT}\s+(?:like\s+)?(?:you|him|her|them|{_PEOPLE})\b|\b(?:these|those|the|our|my|that|this)\s+{_INSULT}\s+(?:{_PEOPLE}|at|in|from|who)\b"
        ),
    ),
    (
        "an insult aimed at a person",
        _rx(
            rf"(?:^|[,.!?;:—-]\s*)(?:you\s+)?{_INTENS}{_INSULT}\s*[.!?]*\s*$|^\s*(?:hey\s+|oi\s+|listen\s+)?{_INSULT}\s*[,!]"
        ),
    ),
    (
        "an insult aimed at a person",
        _rx(
            # "morons - the lot of you", "clowns, every one of you", "losers, all of ya"
            rf"\b{_INSULT}s?\b\s*[,.!:;—–-]*\s*(?:{_YOU_ALL})\b"
            # mockery of the reader: "imagine being this clueless", "how dumb are you people"
            rf"|\bimagine\s+(?:being|having\s+to\s+be|how)\s+(?:so|this|that|such\s+an?|as)\s+(?:\w+\s+)?(?:{_INSULT}|{_INSULT_YOU})\b"
            rf"|\bhow\s+(?:stupid|dumb|thick|dense|clueless|ignorant|braindead|slow)\s+(?:are|is|can)\s+(?:you|u|ya|he|she|they|(?:{_YOU_ALL}))\b"
        ),
    ),
    (
        "a threat",
        _rx(
            # a threat on condition of what the person does here: "keep messaging me and you'll see", "one more
            # comment like that and I'm coming" (what follows is left open: the condition is about this wall or the
            # club, not the game, so "keep attacking and I'll cast Shield" is not matched)
            r"\b(?:keep|carry\s+on|go\s+on|continue|if\s+you\s+(?:keep|carry\s+on|ever|dare)(?:\s+\w+)?|one\s+more|try|dare)\s+"
            r"(?:\w+\s+){0,2}?(?:posting|post|messaging|message|commenting|comment|replying|reply|spamming|dming|pm'?ing|"
            r"showing\s+up|turning\s+up|coming\s+(?:here|to\s+(?:game|the\s+club|fnm|our))|asking|whining|complaining|mouthing\s+off|"
            r"running\s+your\s+mouth|talking\s+(?:shit|crap|back|trash)|reporting|downvoting)\b[^.?!]{0,30}?"
            r"\b(?:and|or)\s+(?:i'?ll|i\s+will|we'?ll|we\s+will|i'?m\s+(?:gonna|going\s+to|coming)|you'?ll|you\s+will|see\s+what\s+happens)"
            r"|\b(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:\w+\s+)?coming\s+(?:for|after)\s+(?:you|u|him|her|them)\b"
            # a visit in person: "I'll turn up at his office", "we'll be waiting outside her house" (not a game
            # night, a table or an event)
            r"|\b(?:i'?ll|i\s+will|we'?ll|we\s+will|i'?m\s+(?:gonna|going\s+to)|gonna)\s+(?:\w+\s+)?(?:show\s+up|turn\s+up|"
            r"pay\s+(?:you|him|her|them)\s+a\s+visit|be\s+waiting)\s+(?:at|to|outside|by|near)\s+"
            r"(?:your|ur|his|her|their|(?-i:[A-Z][a-z]+)['’]s)\s+(?!(?:game|table|session|campaign|tournament|event|league|turn)\b)\w+"
            # damage to the reader's own things ("his shop" may be a target in the fiction; "your shop" is the reader's)
            r"|\b(?:i'?ll|i\s+will|we'?ll|we\s+will|i'?m\s+(?:gonna|going\s+to)|gonna|someone\s+(?:should|will|is\s+going\s+to))\s+"
            r"(?:\w+\s+)?(?:smash|trash|wreck|torch|burn\s+down|vandali[sz]e)\s+(?:up\s+)?(?:your|ur)\s+(?:shop|store|business|stall|place|"
            r"house|home|car|van|bike|office|flat|apartment|stuff)\b"
        ),
    ),
    (
        "a threat",
        _rx(
            r"\b(?:i'?ll|i\s+will|i'?d|i\s+would|i\s+wanna|i'?m\s+(?:going|gonna)\s+to|i'?m\s+gonna|im\s+gonna|gonna|we'?ll|we\s+will|we'?d|i\s+swear\s+i'?ll|i\s+could|i\s+want\s+to|someone\s+should|somebody\s+should|i\s+hope\s+someone)\s+"
            r"(?:\w+\s+){0,2}(?:kill|murder|hurt|beat|punch|stab|shoot|strangle|choke|slap|smash|break|end|destroy|ruin|find|hunt|get|burn|rape|stalk|dox+|swat|expose|visit|wreck|bash|jump|kick|humiliate|embarrass|harass|bully|shame|mock|torment|terrori[sz]e|intimidate|report|sue|out|cancel|follow)\s+"
            r"(?:you|u|him|her|them|your|his|their|whoever|whomever|anyone\s+who|anybody\s+who|the\s+(?:person|guy|one|idiot|people|clown)\s+who|(?:that|the|this|our|my|your)\s+(?:judge|gm|dm|guy|kid|player|mod|moderator|ref|referee|host|organi[sz]er|owner|designer|developer|dev|admin|streamer|author)s?|(?-i:[A-Z][a-z]{2,}))\b(?!['’]s\b)(?!\s+(?:with\s+(?:my|a|an|the)\s+(?:spell|sword|fireball|attack|axe|bow|dagger|magic|weapon|creature|card)|in\s+(?:the\s+)?game|on\s+(?:the\s+)?board|next\s+turn|this\s+turn|first))"
            r"|\bmake\s+(?:you|him|her|them|that\s+\w+)\s+(?:pay|regret|suffer|bleed|sorry)\b(?!\s+(?:\d|x\b|life|mana|the|for|an?\b|extra|additional|more|twice|double|with|its|that|this|each|one|two|three))"
            r"|\b(?:in\s+real\s+life|irl|after\s+the\s+(?:game|session|match|tournament|event)|outside\s+the\s+(?:game|store|club|venue)|at\s+(?:your|his|her)\s+(?:house|home|door|work|school))\b[^.?!]{0,40}\b(?:kill|hurt|beat|punch|stab|shoot|find|wait|get|deal\s+with|visit|see)\b"
            r"|\b(?:kill|hurt|beat|punch|stab|shoot|find|get|deal\s+with)\s+(?:you|him|her|them)\b[^.?!]{0,30}\b(?:in\s+real\s+life|irl|after\s+the\s+(?:game|session|match)|outside|at\s+(?:your|his|her)\s+(?:house|home|work|school))"
            r"|\b(?:i'?ll|i\s+will|gonna|going\s+to|i'?m\s+going\s+to)\s+(?:\w+\s+)?(?:slash|key|smash|burn|trash|vandali[sz]e|wreck|break|bust|kick\s+in|punch\s+in|cave\s+in)\s+(?:your|his|her|their|(?-i:[A-Z][a-z]{2,})['’]s)\s+(?:tyres|tires|car|house|windows?|face|teeth|legs|head|skull|kneecaps|nose|door|stuff|things)"
            r"|\bdie\s+in\s+a\s+(?:fire|ditch|hole)\b"
            r"|\bteach\s+(?:you|him|her|them|that\s+\w+|(?-i:[A-Z][a-z]{2,}))\s+a\s+lesson\b"
            r"|\bmake\s+(?:your|his|her|their|(?-i:[A-Z][a-z]{2,})['’]s)\s+(?:life|week|time\s+here)\s+(?:a\s+)?(?:hell|miserable|a\s+misery|unbearable)"
            r"|\bruin\s+(?:your|his|her|their|(?-i:[A-Z][a-z]{2,})['’]s)\s+(?:life|reputation|career)"
            r"|\bi\s+(?:know|have|got|found)\s+(?:your|his|her|their)\s+(?:ip|ip\s+address|real\s+name|home\s+address|address|school|workplace|family|parents|phone\s+number)\b"
            r"|\b(?:be\s+)?waiting\s+for\s+(?:you|him|her|them|(?-i:[A-Z][a-z]{2,}))\s+(?:outside|after|in\s+the\s+car\s+park|in\s+the\s+parking\s+lot|at\s+(?:your|his|her)\s+\w+)"
            r"|\bi\s+know\s+where\s+(?:[\w'’-]+\s+){1,7}?(?:live|lives|work|works|sleep|sleeps|park|parks|stay|stays|go\s+to\s+school|goes\s+to\s+school)\b"
            r"|\b(?:show|turn)\s+up\s+(?:at|outside)\s+(?:your|his|her|their|(?-i:[A-Z][a-z]+)['’]s)\s+(?:door|house|home|place|work|office|school|flat)"
            r"|\b(?:watch|better\s+watch|'d\s+better\s+watch|’d\s+better\s+watch)\s+(?:your|ur|his|her|their)\s+back\b|\byou(?:'ll|\s+will)\s+(?:regret|pay\s+for)\b|\byou(?:'re|\s+are)\s+(?:dead\s+meat|so\s+dead|next|finished)\b"
            r"|\b(?:swat|swatting|dox|doxx|doxxing|doxing)\b|\b(?:post|leak|publish|share|spread|send)\s+(?:your|his|her|their)\s+(?:address|number|phone|details|info|personal|photos?|pics?|nudes?|real\s+name|location|ip)"
            r"|\b(?:find|track|trace)\s+(?:your|his|her|their)\s+(?:address|house|home|ip|location|family|real\s+name)"
            r"|\b(?:post|leak|publish|share|spread|put|dump|send\s+out)\s+(?:[\w'’-]+\s+){0,3}?(?:home\s+|house\s+|real\s+|work\s+)?(?:address|phone\s+number|number|real\s+name|details|location|nudes|photos|pics|workplace)\s+(?:online|everywhere|on\s+\w+|to\s+everyone|in\s+the\s+\w+)"
            r"|\b(?:got|have|found|know)\s+(?:his|her|your|their|(?-i:[A-Z][a-z]+)['’]s)\s+(?:\w+['’]s\s+)?(?:home\s+|phone\s+|real\s+|work\s+)?(?:address|number|phone\s+number|real\s+name|workplace|school)\b"
            r"|\b(?:hope|wish)\b[^.?!]{0,60}?\b(?:gets?|get|is|was)\s+(?:hit\s+by\s+an?\s+(?:bus|car|truck|lorry|train)|run\s+over|cancer|fired|sacked|what'?s\s+coming|hurt|beaten|killed|murdered|raped)"
            r"|\b(?:hope|wish)\b[^.?!]{0,60}?\b(?:dies?|died)\s+in\s+a\s+(?:fire|ditch|hole|crash)"
            r"|\b(?:spread\s+the\s+word|spread\s+it|tell\s+everyone|warn\s+everyone|everyone\s+should\s+know|name\s+and\s+shame)\b"
            r"|\b(?:dead\s+to\s+(?:me|us|the\s+(?:whole\s+)?(?:group|club|table|community)))"
            r"|\bsee\s+you\s+(?:outside|in\s+the\s+car\s+park|in\s+the\s+parking\s+lot)\b|\bhope\b[^.?!]{0,40}?\b(?:you|he|she|they)\s+(?:die|dies|get\s+hit|gets\s+hit|get\s+cancer|gets\s+cancer|rot|rots|burn|burns|suffer|suffers)\b"
            r"|\bdie\s+alone\b"
        ),
    ),
    (
        "telling a person to harm themselves",
        _rx(
            r"\b(?:kill|hang|off|shoot|end)\s+(?:your|ur)\s*self\b|\bkys\b|\bneck\s+yourself\b|\bgo\s+(?:and\s+)?(?:die|jump\s+off|drown)\b|\b(?:drink|eat)\s+bleach\b"
            r"|\b(?:world|everyone)\s+would\s+be\s+better\s+(?:off\s+)?without\s+(?:you|him|her)\b|\bunalive\s+(?:your|ur)self"
        ),
    ),
    (
        "exclusion aimed at a person",
        _rx(
            r"\b(?:no\s*one|nobody|noone|no-one|everyone|everybody|we\s+all|the\s+whole\s+(?:club|group|table))\s+(?:here\s+|(?:at|in|from|on)\s+(?:the|this|our|my)\s+\w+\s+)?"
            r"(?:likes|wants|loves|cares\s+about|hates|despises|laughs\s+at|can'?t\s+stand|can\s+stand|is\s+sick\s+of|trusts|respects|invited|invites|"
            r"wants\s+to\s+(?:play|sit)\s+with|would\s+(?:miss|notice))\s+(?:you|him|her|them|(?-i:[A-Z][a-z]{2,}))\b(?!['’]s)"
            r"|\b(?:no\s*one|nobody|noone)\s+(?:would|will|is\s+going\s+to)\s+(?:miss|notice|care\s+about|mourn)\s+(?:you|him|her|them)\b"
            r"|\b(?:stop|quit)\s+(?:coming|showing\s+up|playing\s+with\s+us|posting|talking)\b(?!\s+(?:back|into|from))"
            r"|\b(?:you|u|he|she|they|(?-i:[A-Z][a-z]{2,}))\s+(?:smell|stink|reek|smells|stinks|reeks)\b(?!\s+(?:the|a|an|of|like\s+(?:a|an|the)\s+(?:trap|ambush)))"
            r"|\b(?:should|needs?\s+to|deserves?\s+to|ought\s+to)\s+(?:all\s+|just\s+|really\s+|literally\s+)?(?:be|get)\s+(?:fired|sacked|banned|locked\s+up|ashamed|deported)\b"
            # violence wished on someone needs a person as its subject: "which enemy should be killed first?" is tactics
            r"|\b(?:he|she|they|you|whoever(?:\s+\w+){1,5}|(?:the\s+)?(?:people|guy|guys|person|designers?|devs?|developers?|creators?|makers?|mods?|moderators?|admins?|gm|dm|judge|writers?|authors?|players?\s+who|idiots?|morons?)(?:\s+\w+){0,5}|(?!(?-i:Which|What|Who|When|Where|Why|How|Should|Would|Could|Can|Does|Do|Is|Are|The|This|That|If|In|On|My|Our|Your)\b)(?-i:[A-Z][a-z]{2,}))"
            r"\s+(?:should|needs?\s+to|deserves?\s+to|ought\s+to)\s+(?:all\s+|just\s+|really\s+|literally\s+)?(?:be|get)\s+(?:punched|slapped|beaten(?:\s+up)?|shot|hanged|hung|killed|lynched|strung\s+up|executed|burned|put\s+down|stabbed|run\s+over)\b"
            r"|\b(?:the\s+)?(?:dumbest|stupidest|ugliest|worst|most\s+(?:stupid|annoying|pathetic|useless|incompetent|disgusting))\s+(?:person|player|human|guy|man|woman|girl|gm|dm|judge|mod|moderator|streamer|host|kid|dude)\s+(?:alive|ever|in\s+the\s+world|on\s+earth|i'?ve\s+(?:ever\s+)?met|on\s+the\s+planet)"
            r"|\bgo\s+(?:and\s+)?(?:f+|ef+|eff\s+off\s+and|frick|fork|screw|bugger|play\s+with)\s*(?:yo)?u?r\s*sel(?:f|ves)\b"
            r"|\b(?:eat|eats)\s+shit\b|\b(?:full\s+of|piece\s+of)\s+shit\b|\bshit\s+for\s+brains\b|\b(?:screw|fuck|damn)\s+(?:you|u|him|her|them)\b"
            r"|\b(?:shut\s+(?:the\s+\w+\s+)?up|get\s+lost|go\s+away|piss\s+off|sod\s+off|bugger\s+off|get\s+out\s+of\s+(?:here|our\s+\w+)|"
            r"uninstall\b(?:\s+(?:the\s+game|life))?|go\s+back\s+to\s+(?:your|where)|you\s+should\s+be\s+(?:banned|ashamed|fired)|you\s+suck\b|you\s+guys\s+suck|"
            r"nobody\s+asked\s+you|who\s+asked\s+you|get\s+a\s+life|touch\s+grass|go\s+cry|cry\s+about\s+it|cope\s+and\s+seethe|"
            r"ban\s+(?:him|her|them|this\s+\w+)\b|(?:he|she|they)\s+should\s+(?:be\s+banned|quit|leave|never\s+play))"
        ),
    ),
    (
        "body or identity shaming",
        _rx(
            r"\b(?:fat|ugly|smelly|stinky|hideous|disgusting|gross)\s+(?:\w+\s+)?(?:who|that)\s+(?:plays|runs|hosts|comes|sits|always)"
            r"|\b(?:girls|women|gays?|trans\s+people|blacks|jews|muslims|immigrants|foreigners|autistic\s+people)\s+(?:can'?t|shouldn'?t|don'?t\s+belong|ruin|are\s+(?:too|all))\b"
        ),
    ),
]


_HARASS_INTL = _rx(
    r"\b(?:eres|sos)\s+(?:un|una|muy)?\s*(?:idiota|imbecil|estupido|estupida|tonto|tonta|inutil|perdedor|subnormal|gilipollas|payaso)"
    r"|\b(?:t'?es|tu\s+es|vous\s+etes)\s+(?:vraiment\s+|trop\s+)?(?:un|une)?\s*(?:idiot|idiote|imbecile|cretin|crétin|abruti|debile|nul|nulle|connard|conne)"
    r"|\bdu\s+(?:bist|bist\s+so|bist\s+ein)\s+(?:so\s+)?(?:ein|eine)?\s*(?:idiot|trottel|vollidiot|depp|versager|arschloch|spast|opfer|dummkopf)"
    r"|\bsei\s+(?:un|una|proprio\s+un)\s+(?:idiota|cretino|stupido|stupida|coglione|deficiente)|\bvoce\s+e\s+(?:um|uma)\s+(?:idiota|burro|imbecil)"
)
_HARASS_SCRIPT = re.compile(
    r"(?:ты|вы)\s+(?:\w+\s+)?(?:идиот|дурак|дура|дебил|тупой|тупая|урод|мразь|чмо|придурок|лох|ничтожество)"
    r"|(?:你|妳|您)(?:是|真是|就是)?(?:个|一个)?(?:白痴|傻瓜|笨蛋|蠢货|废物|傻逼|垃圾|弱智|混蛋)|去死|滚开|(?:お前|てめえ|あんた)(?:は)?(?:バカ|アホ|クズ)"
)
_HACKING = _rx(
    r"\b(?:hack|ddos|dos|phish|brute[\s-]?force|crack)\s+(?:into\s+)?(?:my|his|her|their|your|(?-i:[A-Z][a-z]+)['’]s|\w+['’]s)\s+(?:ex['’]?s?\s+)?(?:\w+\s+)?(?:account|instagram|insta|facebook|fb|email|gmail|phone|discord|twitter|snap(?:chat)?|tiktok|router|pc|computer|wifi|steam|psn|server)"
    r"|\bhack\s+my\s+ex\b"
)
_QUOTED = re.compile(r"\"[^\"]{1,200}\"|“[^”]{1,200}”|«[^»]{1,200}»")


def check_harassment(text: str) -> str | None:
    if _HARASS_INTL.search(plain(text)) or _HARASS_SCRIPT.search(
        unicodedata.normalize("NFKC", text).casefold()
    ):
        return "harassment (an insult aimed at a person)"
    if _HACKING.search(text):
        return "harassment (asks to break into a person's account)"
    # the original text too: a person's name is matched by its capital letter
    for variant in (plain(text), text, unmasked(text)):
        for reason, rx in _HARASS:
            hit = rx.search(variant)
            if hit and reason == "a threat" and _only_quoted(variant, rx):
                continue  # "The orc screams "I will kill you all!"": a character's line, not the player's threat
            if hit:
                return f"harassment ({reason})"
    return None


def _only_quoted(text: str, rx: re.Pattern[str]) -> bool:
    """True when every match of ``rx`` lies inside quotation marks."""
    return not rx.search(_QUOTED.sub(" ", text))


# The order the doorman runs them in ------------------------------------------------------------------


def rule_checks(max_chars: int = DEFAULT_MAX_CHARS) -> list[tuple[str, Callable[[str], str | None]]]:
    return [
        ("length", lambda t: check_length(t, max_chars)),
        ("markup", check_markup),
        ("injection", check_injection),
        ("personal-data", check_personal_data),
        ("links", check_links),
        ("spam", check_spam),
        ("advertising", check_advertising),
        ("profanity", check_profanity),
        ("harassment", check_harassment),
    ]


def screen_rules(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str | None:
    """The first rule that holds the question, as its reason; None when all rules pass."""
    for _name, check in rule_checks(max_chars):
        reason = check(text)
        if reason:
            return reason
    return None

"""Russian text normalisation for the question log: tokens, stop words, lemmas, slang, a rule classifier.

The project's one Russian tokeniser/lemmatiser. Pipeline of :func:`terms` (each step optional):

1. ``normalize``: lowercase, ``ё → е``, whitespace collapsed;
2. ``tokenize``: Unicode word tokens ``[a-zа-я0-9]+`` (hyphenated words such as ``физ-ра`` kept whole);
3. slang: tokens whose Snowball stem equals the stem of a slang key are replaced by the normal form
   (``стипуху → стипендия``, ``общаги → общежитие``; multi-word normal forms expand to several tokens);
4. stop words removed: :data:`STOP_WORDS` = the maintained Russian and English lists of the ``stop-words``
   package (data shipped in its wheel) + this project's conversational additions (``подскажите``,
   ``пж``, ``плиз``…);
5. lemmatisation with ``pymorphy3`` and its Russian dictionaries (``pymorphy3-dicts-ru``): the normal form
   of a dictionary word (``стипендии → стипендия``, ``материальную → материальный``); a token the
   dictionary does not know (abbreviations, typos, names) is kept as it is (``севгу``, ``пгас``), since
   pymorphy's guesses for those are often wrong (``пгас → пгаснуть``). ``lemmatize=False`` gives Snowball
   stems instead (used where only matching matters).

Topic names use :func:`topic_terms`: lemmas without stop words and without :data:`FILLER_WORDS` (the
domain's filler: generic verbs such as ``работать``, ``подсказать``, ``получить``, words every question of
a student bot shares such as ``студент``, ``вопрос``, ``бот``). :func:`token_kind` tells dictionary words
from ``proper`` nouns (pymorphy tags Name/Surn/Patr/Geox/Orgn/Trad), ``latin`` tokens and ``unknown``
tokens; the topic namer keeps the last three only when they characterise the topic.

:func:`classify` is a transparent **rule-based** classifier (greeting / thanks / jailbreak / off_topic /
question); every rule is listed in :data:`CLASSIFIER_RULES` so that the UI can show them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from stop_words import get_stop_words

from voproshalych_eval.datasets.files import RecordFileError, read_file, read_json_object
from voproshalych_eval.metrics.text_overlap import stem_words

# ---------------------------------------------------------------------------------------------
# normalisation and tokens
# ---------------------------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def _words(block: str) -> list[str]:
    """Whitespace-separated words of a literal block (keeps the word lists readable)."""
    return block.split()

_TOKEN = re.compile(r"[a-zа-я0-9]+(?:-[a-zа-я0-9]+)*")


def normalize(text: str | None) -> str:
    """Lowercase, ``ё → е``, collapse whitespace, strip."""
    if not text:
        return ""
    return _WS.sub(" ", str(text).lower().replace("ё", "е")).strip()


def tokenize(text: str | None) -> list[str]:
    """Word tokens of the normalised text (Cyrillic, Latin, digits; hyphenated words kept whole).

    Why not :func:`voproshalych_eval.metrics.text_overlap.tokenize` (``\\w+``): topics and lemmas need a
    hyphenated word whole (``какой-нибудь``, ``бизнес-информатика`` is one term and one lemma for pymorphy3),
    while ROUGE/BLEU follow their reference implementations, which split at the hyphen. Both normalise
    ``ё → е`` and share the one Snowball stemmer (:func:`~voproshalych_eval.metrics.text_overlap.stem_words`).
    """
    return _TOKEN.findall(normalize(text))


_PROJECT_STOP_WORDS: frozenset[str] = frozenset(
    _words("""
    а без более бы был была были было быть в вам вас весь во вот все всего всех вы где да даже для до
    его ее ей ему если есть еще же за здесь и из или им их к как какая какие каким какой какую
    когда кто куда ли либо мне меня мной мы на над надо наш не него нее нет ни них но ну о об однако
    он она они оно от очень по под при про с со так также такой там те тем то того тоже той только
    том ту тут ты у уже хотя чего чей чем что чтоб чтобы чье эта эти это этого этой этом эту я
    сколько почему зачем откуда какое каких какого каком какому который которая которое которые
    можно нужно нужна нужен нужны надо мочь могу может можете могут хочу хотим хотел хотела
    подскажите подскажи скажите скажи пожалуйста пж пжл плиз спросить вопрос вопросы узнать знать
    здравствуйте привет добрый доброго времени суток день вечер утро спасибо благодарю ок окей заранее
    помогите помоги срочно ребят ребята слушай такой такая извините плиз пжлст норм вообще
    ли бы себя себе свой своя свое свои мой моя мое мои твой твоя твое твои ваш ваша ваше ваши
    сейчас теперь потом тогда опять снова ещё уж вообще просто вроде типа короче кстати
    быть будет будут буду был была было были является этот эта этих тот та те всё
    раз два три 1 2 3 4 5 6 7 8 9 0 г гг др т е пр
    ко нибудь либо то-то кое из-за из-под по-моему по-твоему все-таки так-то то-есть чуть-чуть
    """)
)




def _package_stop_words() -> frozenset[str]:
    """The ``stop-words`` package's Russian and English lists (its data files ship in the wheel)."""
    words: set[str] = set()
    for language in ("russian", "english"):
        words.update(normalize(w) for w in get_stop_words(language))
    return frozenset(w for w in words if w)


# function words and conversational fillers: the maintained lists plus this project's additions
STOP_WORDS: frozenset[str] = _package_stop_words() | _PROJECT_STOP_WORDS

# The domain's filler (lemmas): words that occur in questions on every subject of a student help bot and
# so never name a topic — generic verbs, politeness, the bot and the university themselves. Extend it
# here (or pass ``filler=`` to :func:`topic_terms`) when a topic name shows another one.
FILLER_WORDS: frozenset[str] = frozenset(
    _words("""
    подсказать сказать рассказать объяснить знать узнать понять понимать работать делать сделать
    хотеть мочь уметь являться помочь помогать интересовать интересоваться спросить спрашивать
    писать написать ответить отвечать найти искать получить получать нужный нужно надо можно
    прийти приходить давать дать стать быть иметься видеть посмотреть смотреть находиться
    вопрос ответ бот вопрошалыч чат здравствовать здравствуйте привет спасибо благодарить благодарный
    пожалуйста плиз заранее срочно очень ребята слушать извинить извинять уважаемый
    запутаться гореть никто студент студентка севгу сгу университет универ ситуация случай вариант
    вообще например типа короче кстати вроде реально нормально норм ок окей ладно пж пжл пжлст плз
    какой-нибудь что-то как-то где-то кто-то какой-то такой который какой весь свой каждый
    """)
)


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """Snowball Russian stem of one (normalised) token; Latin tokens and numbers are returned as is."""
    if not token or not re.search(r"[а-я]", token):
        return token
    return stem_words([token])[0]


_PROPER_TAGS = frozenset({"Name", "Surn", "Patr", "Geox", "Orgn", "Trad"})
_LATIN = re.compile(r"[a-z]")
_CYRILLIC = re.compile(r"[а-я]")


@lru_cache(maxsize=1)
def _morph():  # type: ignore[no-untyped-def]
    import pymorphy3  # heavy: defers pymorphy3

    return pymorphy3.MorphAnalyzer(lang="ru")


def pymorphy_available() -> bool:
    """True when ``pymorphy3`` and its Russian dictionaries are installed (a dependency of the package)."""
    try:
        _morph()
    except (ImportError, ValueError, OSError):
        return False
    return True


@lru_cache(maxsize=300_000)
def _parse(token: str) -> tuple[str, str]:
    """``(lemma, kind)`` of one normalised token; see :func:`lemma` and :func:`token_kind`."""
    if not token or not _CYRILLIC.search(token):
        return token, ("latin" if _LATIN.search(token) else "other")
    if "-" in token and not _morph().word_is_known(token):
        return token, "unknown"
    if not _morph().word_is_known(token):
        return token, "unknown"
    p = _morph().parse(token)[0]
    norm = str(p.normal_form).replace("ё", "е")
    kind = "proper" if _PROPER_TAGS & set(str(p.tag).replace(" ", ",").split(",")) else "word"
    return norm, kind


def lemma(token: str) -> str:
    """Normal form of a normalised token by ``pymorphy3`` (``стипендии → стипендия``, ``ё → е``); tokens the
    dictionary does not know (abbreviations, typos) and non-Cyrillic tokens are returned unchanged."""
    return _parse(token)[0]


def token_kind(token: str) -> str:
    """``word`` (a dictionary word), ``proper`` (a proper noun: name, surname, place, organisation),
    ``unknown`` (Cyrillic but not in the dictionary: abbreviations, typos), ``latin`` or ``other`` (digits)."""
    return _parse(token)[1]


# ---------------------------------------------------------------------------------------------
# slang
# ---------------------------------------------------------------------------------------------

DEFAULT_SLANG: dict[str, str] = {
    "стипуха": "стипендия",
    "стипа": "стипендия",
    "стипендуха": "стипендия",
    "общага": "общежитие",
    "общяга": "общежитие",
    "физра": "физкультура",
    "физ-ра": "физкультура",
    "физо": "физкультура",
    "хвост": "задолженность",
    "хвосты": "задолженности",
    "академ": "академический отпуск",
    "академка": "академический отпуск",
    "военник": "военный билет",
    "военка": "военная кафедра",
    "зачетка": "зачетная книжка",
    "студак": "студенческий билет",
    "студик": "студенческий билет",
    "препод": "преподаватель",
    "преподша": "преподаватель",
    "пары": "занятия",
    "пара": "занятие",
    "универ": "университет",
    "курсач": "курсовая работа",
    "курсовик": "курсовая работа",
    "матан": "математический анализ",
    "вышка": "высшая математика",
    "допса": "дополнительная сессия",
    "отработка": "отработка",
    "расписос": "расписание",
    "расп": "расписание",
    "лк": "личный кабинет",
    "лмс": "lms",
    "гас": "государственная академическая стипендия",
    "пгас": "повышенная государственная академическая стипендия",
    "матпомощь": "материальная помощь",
    "бюджетник": "бюджетная форма",
    "платник": "платная форма",
    "деканат": "деканат",
    "сессия": "сессия",
    "инфа": "информация",
    "дз": "домашнее задание",
    "спс": "спасибо",
    "пасиб": "спасибо",
}
# identity entries (``деканат``) are no-ops for replacement; remove them from the usage statistics
DEFAULT_SLANG = {k: v for k, v in DEFAULT_SLANG.items() if k != v}


SLANG_HEADERS = {"slang", "word", "сленг", "слово"}


def load_slang(path: str | Path, *, merge_defaults: bool = True, data: bytes | None = None) -> dict[str, str]:
    """Read a slang dictionary from JSON (``{"слово": "норма"}``) or CSV (``slang,normal``; the header row
    may be left out), through the one file reader (:mod:`voproshalych_eval.datasets.files`): errors name the
    file, the row and the field.

    With ``merge_defaults`` the file's entries extend/override :data:`DEFAULT_SLANG`.
    """
    p = Path(path)
    entries: dict[str, str] = {}
    if p.suffix.lower() == ".json":
        obj = read_json_object(p, data=data, name=p.name)
        for k, v in obj.items():
            if not isinstance(v, str) or not v.strip():
                raise RecordFileError(p.name, None, k, "the normal form must be non-empty text")
            entries[normalize(str(k))] = normalize(v)
    else:
        f = read_file(p, data=data, name=p.name)
        if len(f.columns) < 2:
            raise RecordFileError(p.name, 1, None, "expected two columns: slang, normal form")
        key, val = f.columns[0], f.columns[1]
        pairs = [] if key.strip().lower() in SLANG_HEADERS else [(1, key, val)]  # no header row: the first is an entry
        pairs += [(row, rec[key], rec[val]) for rec, row in zip(f.records, f.rows, strict=True)]
        for row, k, v in pairs:
            if not k.strip():
                continue
            if not v.strip():
                raise RecordFileError(p.name, row, val, f"no normal form for {k!r}")
            entries[normalize(k)] = normalize(v)
    return {**(DEFAULT_SLANG if merge_defaults else {}), **entries}


class SlangNormalizer:
    """Replace slang tokens (matched by Snowball stem, so inflected forms match) by their normal form."""

    def __init__(self, slang: Mapping[str, str] | None = None) -> None:
        self.slang = dict(DEFAULT_SLANG if slang is None else slang)
        self._by_token: dict[str, str] = {}
        self._by_stem: dict[str, str] = {}
        for key in self.slang:
            k = normalize(key)
            self._by_token[k] = key
            if len(stem(k)) >= 3:
                self._by_stem.setdefault(stem(k), key)

    def match(self, token: str) -> str | None:
        """The slang key a token is a form of, or None."""
        key = self._by_token.get(token)
        if key is not None:
            return key
        return self._by_stem.get(stem(token))

    def apply(self, tokens: Iterable[str]) -> list[str]:
        out: list[str] = []
        for t in tokens:
            key = self.match(t)
            if key is None:
                out.append(t)
            else:
                out.extend(tokenize(self.slang[key]))
        return out

    def usage(self, texts: Iterable[str]) -> Counter[str]:
        """How many texts use each slang key (a text counts once per key)."""
        counts: Counter[str] = Counter()
        for text in texts:
            found = {k for k in (self.match(t) for t in tokenize(text)) if k is not None}
            counts.update(found)
        return counts


@lru_cache(maxsize=4)
def _default_slang() -> SlangNormalizer:
    return SlangNormalizer()


# ---------------------------------------------------------------------------------------------
# terms and readable names
# ---------------------------------------------------------------------------------------------


def terms(
    text: str | None,
    *,
    slang: SlangNormalizer | None = None,
    use_slang: bool = True,
    stop_words: frozenset[str] | set[str] = STOP_WORDS,
    lemmatize: bool = True,
    min_len: int = 2,
    with_surface: bool = False,
) -> list[str] | list[tuple[str, str]]:
    """Normalised content terms of a text: tokens → slang → stop words removed → lemmas (or stems).

    A token is dropped when it or its lemma is a stop word. With ``with_surface=True`` returns
    ``(term, surface form)`` pairs (for lemmas the surface form is the lemma itself, already readable).

    Each distinct text is processed once per process and setting (:func:`_terms_cached`, an LRU cache of
    :data:`TERMS_CACHE_SIZE` entries): the analyses of a log (topics, names, examples, trends, domain
    tables) ask for the terms of the same questions several times, and a click asks again. A ``stop_words``
    that is a mutable ``set`` is not cached (not hashable).
    """
    sl = None if not use_slang else (slang or _default_slang())
    if isinstance(stop_words, frozenset):
        pairs = _terms_cached(text, sl, stop_words, lemmatize, min_len)
    else:
        pairs = _terms_pairs(text, sl, stop_words, lemmatize, min_len)
    if with_surface:
        return list(pairs)
    return [p[0] for p in pairs]


#: distinct (text, setting) pairs whose terms :func:`terms` keeps (a 50k-row log has < 50k distinct questions)
TERMS_CACHE_SIZE = 200_000


@lru_cache(maxsize=TERMS_CACHE_SIZE)
def _terms_cached(text: str | None, slang: SlangNormalizer | None, stop_words: frozenset[str], lemmatize: bool,
                  min_len: int) -> tuple[tuple[str, str], ...]:
    """:func:`_terms_pairs`, cached per text and setting (the slang normaliser by identity)."""
    return _terms_pairs(text, slang, stop_words, lemmatize, min_len)


def _terms_pairs(text: str | None, slang: SlangNormalizer | None, stop_words: frozenset[str] | set[str],
                 lemmatize: bool, min_len: int) -> tuple[tuple[str, str], ...]:
    """The ``(term, surface form)`` pairs of :func:`terms` (``slang=None``: no slang step)."""
    toks = tokenize(text)
    if slang is not None:
        toks = slang.apply(toks)
    out_pairs: list[tuple[str, str]] = []
    for t in toks:
        if t in stop_words or len(t) < min_len or t.isdigit():
            continue
        if lemmatize:
            lem = lemma(t)
            if lem in stop_words:
                continue
            out_pairs.append((lem, lem))
        else:
            out_pairs.append((stem(t), t))
    return tuple(out_pairs)


def topic_terms(
    text: str | None,
    *,
    slang: SlangNormalizer | None = None,
    filler: frozenset[str] | set[str] = FILLER_WORDS,
    min_len: int = 3,
) -> list[str]:
    """Lemmas that may name a topic: :func:`terms` without the domain's filler words, numbers and tokens
    shorter than ``min_len`` (the analyzer of the topic namer's ``CountVectorizer``)."""
    out = terms(text, slang=slang, lemmatize=True, min_len=min_len)
    return [t for t in out if t not in filler and len(t) >= min_len and not t.isdigit()]  # type: ignore[operator]


class TermVocabulary:
    """Counts terms and remembers each term's most frequent surface form for display (stems are unreadable)."""

    def __init__(self) -> None:
        self._surface: dict[str, Counter[str]] = {}

    def add(self, pairs: Iterable[tuple[str, str]], weight: int = 1) -> list[str]:
        """Count the surface forms of ``pairs`` ``weight`` times (a text that occurs ``weight`` times)."""
        out = []
        for term, surface in pairs:
            self._surface.setdefault(term, Counter())[surface] += weight
            out.append(term)
        return out

    def display(self, term: str) -> str:
        """Readable form of a term; a bigram ``"a b"`` shows both words."""
        if " " in term:
            return " ".join(self.display(t) for t in term.split(" "))
        c = self._surface.get(term)
        return c.most_common(1)[0][0] if c else term


def document_terms(
    texts: Iterable[str], *, slang: SlangNormalizer | None = None, lemmatize: bool = True
) -> tuple[list[list[str]], TermVocabulary]:
    """Terms of many texts plus the vocabulary that maps them back to readable words.

    Each distinct text is processed and counted once, weighted by its number of rows, in the order of its
    first row (so the vocabulary's counts and its ties are those of a row-by-row pass)."""
    vocab = TermVocabulary()
    keys = [text or "" for text in texts]
    per: dict[str, list[str]] = {}
    for key, n in Counter(keys).items():  # insertion order = first occurrence
        pairs = terms(key, slang=slang, lemmatize=lemmatize, with_surface=True)
        per[key] = vocab.add(pairs, weight=n)  # type: ignore[arg-type]
    return [list(per[key]) for key in keys], vocab


def bigrams(doc: list[str]) -> list[str]:
    """Adjacent term pairs ``"a b"`` of a term list (after stop-word removal)."""
    return [f"{a} {b}" for a, b in zip(doc, doc[1:], strict=False) if a != b]


# ---------------------------------------------------------------------------------------------
# rule-based classifier
# ---------------------------------------------------------------------------------------------

CATEGORIES = ("question", "greeting", "thanks", "off_topic", "jailbreak")

_GREETING_WORDS = {
    "привет", "приветик", "прив", "здравствуйте", "здравствуй", "здрасте", "здрасьте", "добрый", "доброе",
    "доброй", "день", "вечер", "утро", "ночи", "утра", "дня", "хай", "хеллоу", "hello", "hi", "hey", "ку",
    "салют", "салам", "йо", "ау", "эй", "бот", "вопрошалыч", "есть", "кто", "тут", "здесь", "ты",
    "алло", "приветствую", "доброго", "времени", "суток", "начать", "дратути", "хелоу", "йоу", "хаюшки",
}
_THANKS_WORDS = {
    "спасибо", "спасибки", "спс", "пасиб", "пасибо", "благодарю", "благодарствую", "thanks", "thx",
    "спасибочки", "большое", "огромное", "понятно", "понял", "поняла", "ясно", "ок", "окей", "ok",
    "хорошо", "отлично", "супер", "класс", "круто", "помог", "помогли", "помогло", "очень", "вам",
    "тебе", "ты", "лучший", "от", "души", "всё", "все", "ладно", "разобрался", "разобралась",
}
_JAILBREAK = re.compile(
    r"(игнорир\w*|забудь\w*|забуд\w*)\s+(все\s+|всё\s+)?(предыдущ\w+|прошл\w+|свои\w*|инструкц\w+|правил\w*)"
    r"|system\s*prompt|системн\w+\s+(промпт|инструкц|подсказ)|промпт|prompt|jailbreak|\bdan\b"
    r"|режим\w*\s+разработчик|developer\s+mode|без\s+ограничен|ignore\s+(all\s+)?previous"
    r"|ты\s+теперь\s+не\s|представь,?\s+что\s+ты\s|притворись|веди\s+себя\s+как|отвечай\s+как\s+будто"
    r"|напиши\s+(мне\s+)?(вирус)|\[system\]|нов\w+\s+правил|правил\s+нет|ты\s+теперь\s"
    r"|выведи\s+(свои|все)\s|покажи\s+(свой|свои|системн)|какая\s+у\s+тебя\s+модель|на\s+какой\s+модели",
)
_DOMAIN_STEMS = frozenset(
    stem(w)
    for w in _words("""
    стипендия стипендии общежитие общежития физкультура физкультуре зачет зачета зачеты экзамен экзамены
    сессия сессии пересдача пересдачи расписание расписания студенческий студента студент студенты
    деканат деканата справка справки оплата оплатить обучение обучения академический отпуск военный
    военкомат военная кафедра учет библиотека библиотеки практика практики перевод перевестись
    восстановление восстановиться поступление поступить приемная прием абитуриент занятие занятия
    преподаватель преподавателя корпус корпуса аудитория аудитории университет университета кафедра
    институт факультет курс курса семестр семестра диплом выпускная курсовая работа лекция лекции
    семинар пропуск пропуски отработка отработки норматив нормативы задолженность задолженности
    отчисление отчислить договор бюджет бюджетной платной кредит баллы оценка оценки ведомость
    столовая столовой спорт секция секции мероприятие мероприятия новости контакты телефон почта
    почту пароль логин lms модеус расписании учеба учебный учебы группа группы староста куратор
    магистратура бакалавриат аспирантура колледж выпуск скидка льгота льготы матпомощь материальная
    документ документы заявление заявка медосмотр медицинская справку комендант заселение
    выселение комната комнату лаборатория читательский билет книжка зачетная электив элективы
    волонтер волонтерство олимпиада конференция стажировка трудоустройство вакансии карьера
    отопление вода ремонт wi-fi wifi интернет сеть аккаунт учетная запись портал сайт
    каникулы каникул комиссия комиссию стоимость цена платить пенсионный фонд повышенная повышка
    заочка заочное очное очно-заочное бассейн каток бокс тренажерный зал кружок клуб профком
    профсоюз медпункт поликлиника страховка полис пропуск карта банк выплата выплаты приказ ректор
    ректорат проректор декан заведующий сотрудник отдел кабинет адрес время работы график дедлайн
    срок сроки ведомости рейтинг аттестация модуль дисциплина предмет сдать сдавать поступать
    перевестись отчислили восстановиться академ академический общага физра стипуха
    """)
)

CLASSIFIER_RULES: list[dict[str, str]] = [
    {
        "category": "jailbreak",
        "rule_ru": "регулярное выражение: «игнорируй/забудь предыдущие инструкции», «промпт», «режим разработчика», "
        "«представь, что ты», «ты теперь…», «новые правила», «какая у тебя модель» и т. п.",
        "rule_en": "regex: 'ignore/forget previous instructions', 'prompt', 'developer mode', 'pretend you are', "
        "'you are now…', 'new rules', 'which model are you' and similar",
    },
    {
        "category": "greeting",
        "rule_ru": "все слова — из списка приветствий (привет, здравствуйте, добрый день, есть кто…), не больше 6 слов",
        "rule_en": "every word is from the greeting list (hi, hello, good afternoon, anyone there…), at most 6 words",
    },
    {
        "category": "thanks",
        "rule_ru": "все слова — из списка благодарностей/подтверждений (спасибо, понятно, ок…), не больше 8 слов",
        "rule_en": "every word is from the thanks/acknowledgement list (thanks, got it, ok…), at most 8 words",
    },
    {
        "category": "off_topic",
        "rule_ru": "регулярное выражение тем вне университета (погода, матч, биткоин, «реши уравнение», «напиши код», "
        "«ты кто») или реакция-недовольство («не то», «не помогло»)",
        "rule_en": "regex of non-university subjects (weather, match, bitcoin, 'solve the equation', 'write code', "
        "'who are you') or a dissatisfied reaction ('not that', 'did not help')",
    },
    {
        "category": "question",
        "rule_ru": "есть хотя бы одно слово предметной области университета (после замены сленга), "
        "или короткое уточнение «а/и …», или ≥3 слов с вопросительным словом/знаком",
        "rule_en": "at least one university-domain word (after slang normalisation), "
        "or a short follow-up 'а/и …', or >= 3 words with a question word or mark",
    },
    {
        "category": "off_topic",
        "rule_ru": "всё остальное: нет ни одного слова предметной области",
        "rule_en": "everything else: no university-domain word at all",
    },
]


_OFF_TOPIC = re.compile(
    r"президент|погод|анекдот|шутк|стих|песн|фильм|сериал|игр[аыу]\b|видеокарт|биткоин|битко|крипт|курс\s+(доллар|евро|бит)"
    r"|сколько\s+будет\s+\d|тебе\s+лет|ты\s+кто|кто\s+ты|как\s+дела|как\s+тебя\s+зовут|закат|рассвет|гороскоп"
    r"|рецепт|футбол|матч|калори|зодиак|плов|приготов|марс|переведи|доту|что\s+ты\s+умеешь|напиши\s+код|хоккей|мем|девушк|парн[яе]|любов|смысл\s+жизни|как\s+научиться|реши\s+|напиши\s+(стих|песн|рассказ)"
)
_QUESTION_WORDS = frozenset(
    ["как", "когда", "где", "сколько", "что", "почему", "зачем", "какой", "какая", "какие", "каким", "какую", "куда", "откуда", "кто", "можно", "ли", "нужно", "надо", "помогите", "подскажите", "скажите", "есть"]
)
_FEEDBACK = re.compile(r"^(не то|это не то|мимо|не помогло|бред|причем тут|ты не понял|я не об этом|\?+$)")


def classify(text: str | None, *, slang: SlangNormalizer | None = None) -> str:
    """Rule-based category of one logged message: ``question``, ``greeting``, ``thanks``,
    ``off_topic`` or ``jailbreak`` (rules in :data:`CLASSIFIER_RULES`, applied in that order)."""
    norm = normalize(text)
    toks = tokenize(norm)
    if _JAILBREAK.search(norm):
        return "jailbreak"
    if not toks:
        return "off_topic"
    if len(toks) <= 6 and all(t in _GREETING_WORDS for t in toks):
        return "greeting"
    if len(toks) <= 8 and all(t in _THANKS_WORDS for t in toks) and any(
        t in {"спасибо", "спасибки", "спс", "пасиб", "пасибо", "благодарю", "благодарствую", "thanks", "thx",
              "спасибочки", "понятно", "понял", "поняла", "ясно", "ок", "окей", "ok", "хорошо", "отлично",
              "супер", "класс", "круто", "ладно", "разобрался", "разобралась", "помогли", "помогло", "помог"}
        for t in toks
    ):
        return "thanks"
    if _OFF_TOPIC.search(norm) or _FEEDBACK.search(norm):
        return "off_topic"
    expanded = (slang or _default_slang()).apply(toks)
    if any(stem(t) in _DOMAIN_STEMS for t in expanded):
        return "question"
    if toks[0] in {"а", "и"} and len(toks) <= 8:
        return "question"
    if len(toks) >= 3 and (norm.endswith("?") or any(t in _QUESTION_WORDS for t in toks)):
        return "question"
    return "off_topic"


def is_follow_up(text: str | None, *, max_words: int = 6) -> bool:
    """An elliptical follow-up ("а если пропустил?", "а у заочников?"): at most ``max_words`` words starting
    with «а»/«и»/«ну а». It only makes sense with the previous turn, so topic clustering sets it apart."""
    toks = tokenize(text)
    return 0 < len(toks) <= max_words and (toks[0] in {"а", "и"} or toks[:2] == ["ну", "а"])


def classify_many(texts: Iterable[str], *, slang: SlangNormalizer | None = None) -> list[str]:
    """:func:`classify` over many texts (identical texts classified once)."""
    cache: dict[str, str] = {}
    out = []
    for t in texts:
        key = t or ""
        if key not in cache:
            cache[key] = classify(key, slang=slang)
        out.append(cache[key])
    return out


# ---------------------------------------------------------------------------------------------
# agreed noun phrases (readable topic names)
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=300_000)
def part_of_speech(token: str) -> tuple[str, str]:
    """``(lemma, POS)`` of a normalised token by ``pymorphy3`` (``ADJF``, ``NOUN``, …; ``""`` when unknown)."""
    if not token or not _CYRILLIC.search(token) or not _morph().word_is_known(token):
        return token, ""
    p = _morph().parse(token)[0]
    return str(p.normal_form).replace("ё", "е"), str(p.tag.POS or "")


def agreed_phrase(adjective: str, noun: str) -> str | None:
    """``adjective noun`` with the adjective agreed in gender and number with the noun in the nominative
    (``социальный`` + ``стипендия`` → ``социальная стипендия``; a plural-only noun takes the plural); None when
    pymorphy3 cannot inflect them."""
    morph = _morph()
    n = next((p for p in morph.parse(noun) if p.tag.POS == "NOUN"), None)
    a = next((p for p in morph.parse(adjective) if p.tag.POS == "ADJF"), None)
    if n is None or a is None:
        return None
    noun_form = n.inflect({"nomn"}) or n
    plural = "Pltm" in n.tag or noun_form.tag.number == "plur"
    grammemes = {"nomn", "plur"} if plural else {"nomn", "sing", str(noun_form.tag.gender or "masc")}
    adj_form = a.inflect(grammemes)
    if adj_form is None:
        return None
    return f"{adj_form.word} {noun_form.word}".replace("ё", "е")

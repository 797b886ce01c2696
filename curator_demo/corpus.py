"""A deterministic demo corpus: English-like web text with the noise a real crawl has.

``generate_demo_corpus(out, docs, seed)`` writes a few MB of raw JSONL that the
curation steps have real work to do on: prose in five styles from ten sites, and
web noise in fixed, known proportions (boilerplate, near-empty pages, symbol
soup, repeated lines, lorem ipsum, Russian pages, syndicated copies (exact, or with a
few words changed: near-duplicates), exact duplicates, blank and unparsable lines,
schema drift, one cp1252 file, a BOM, a gzip file). The same ``docs`` and ``seed`` give
the same bytes on every machine (Python's ``random.Random``, gzip with a fixed mtime and
no file name).

Beside the data it writes ``demo_corpus_manifest.yaml`` (not an input extension,
so no step reads it as data): what was generated, per kind and per file, and what
``curate ingest`` must therefore report. ``docs/demo-corpus.md`` describes it all.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import io
import json
import random
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import yaml

from curator.errors import CuratorError
from curator.io.writers import write_atomic

DEFAULT_DOCS = 3000
DEFAULT_SEED = 1234
MIN_DOCS = 50
MANIFEST_NAME = "demo_corpus_manifest.yaml"
#: the labelled sample for ``curate evaluate``: JSON lines, but not a corpus extension, so
#: no step that reads the folder takes it for data (docs/demo-corpus.md)
LABELLED_NAME = "labelled_sample.txt"

#: Content kinds other than clean prose: fraction of ``docs`` (every kind at least once).
#: All of these are valid records that ingest accepts; later steps judge them.
CONTENT_NOISE: dict[str, float] = {
    "boilerplate": 0.08,  # prose wrapped in nav menus, cookie banners, footers
    "boilerplate_only": 0.02,  # a page that is nothing but chrome ("Page not found", ...)
    "lorem_ipsum": 0.01,
    "near_empty": 0.02,  # "Loading...", "Click here", one to eight words
    "symbol_soup": 0.015,  # punctuation, digits, base64 and percent-encoding
    "repeated_lines": 0.015,  # one to three lines repeated 15-60 times
    "non_english": 0.015,  # Russian (Cyrillic) pages
    "syndicated": 0.01,  # the text of another clean page under another site's url
    "cp1252": 0.02,  # clean prose with typographic quotes and accents, in the cp1252 file
}

#: Lines added on top of the ``docs`` documents: fraction of ``docs`` (each at least once).
LINE_NOISE: dict[str, float] = {
    "duplicate_within_file": 0.015,  # same url and text as an earlier line of the same file
    "duplicate_across_files": 0.015,  # same url and text as a line of another file
    "unparsable": 0.003,  # truncated JSON, Python repr, HTML, trailing garbage, NaN
    "not_an_object": 0.001,  # a JSON array, string, number or null
    "missing_text": 0.002,  # schema drift: the text is under "content"
    "empty_text": 0.002,  # "text": "" or only whitespace
    "blank": 0.01,  # empty or whitespace-only lines (not records)
}

SEGMENTS = ("segment-00.jsonl", "segment-01.jsonl", "segment-02.jsonl", "segment-03.jsonl",
            "segment-04.jsonl", "segment-05.jsonl.gz")
SEGMENT_SHARES = (0.26, 0.2, 0.16, 0.14, 0.12, 0.12)
BOM_FILE = "segment-01.jsonl"  # saved by an editor that writes a UTF-8 byte-order mark
GZ_FILE = "segment-05.jsonl.gz"  # written by a tool that escapes non-ASCII (ensure_ascii)
CP1252_FILE = "legacy-export-cp1252.jsonl"  # a Windows export: cp1252 and CRLF line ends

# --------------------------------------------------------------------------------------
# Vocabulary. Each list is in rough frequency order and drawn with a Zipf law, so a
# few words are very common and most are rare, as in real text.
# --------------------------------------------------------------------------------------

_W = str.split
DETERMINERS = _W("the the a this that their its our every each some another any no")
PRONOUNS = _W("it they we he she i you")
PREPOSITIONS = _W("of in to for with on at from by about after over into during without "
                  "under between through against before across near")
CONJUNCTIONS = _W("and but because while although when after so since until if")
ADVERBS = _W("also now still already often only never recently quickly later soon again "
             "nearly probably usually finally simply really clearly slowly carefully")
MODALS = _W("will would can could may might should must")
NOUNS = _W(
    "time year people way day man thing woman life child world school state family "
    "group country problem hand part place case week company system program question "
    "work government number night point home water room mother area money story fact "
    "month lot right study book eye job word business issue side kind head house service "
    "friend father power hour game line end member law car city community name president "
    "team minute idea kid body information back parent face others level office door "
    "health person art war history party result change morning reason research girl guy "
    "moment air teacher force education foot boy age policy process music market sense "
    "nation plan college interest death experience effect use class control care field "
    "development role effort rate heart drug show leader light voice wife police mind "
    "price report decision son view relationship town road arm difference value building "
    "action model season society tax director position player record paper space ground "
    "form event official matter center couple site project activity star table need court "
    "oil situation cost industry figure street image phone data picture practice piece land"
)
VERBS = _W(
    "be have do say go get make know think take see come want look use find give tell "
    "work call try ask need feel become leave put mean keep let begin seem help talk turn "
    "start show hear play run move like live believe hold bring happen write provide sit "
    "stand lose pay meet include continue set learn change lead understand watch follow "
    "stop create speak read allow add spend grow open walk win offer remember love consider "
    "appear buy wait serve die send expect build stay fall cut reach kill remain suggest "
    "raise pass sell require report decide pull explain develop carry break receive agree "
    "support hit produce eat cover catch draw choose cause point"
)
ADJECTIVES = _W(
    "other new good high old great big american small large national young different "
    "black long little important political bad white real best right social only public "
    "sure low early able human local late hard major better economic strong possible whole "
    "free military true federal international full special easy clear recent certain "
    "personal open red difficult available likely short single medical current wrong "
    "private past foreign fine common poor natural significant similar hot dead central "
    "happy serious ready simple left physical general environmental financial blue "
    "democratic dark various entire close legal religious cold final main green nice huge "
    "popular traditional cultural"
)
IRREGULAR = {
    "be": ("was", "is"), "have": ("had", "has"), "do": ("did", "does"), "say": ("said", "says"),
    "go": ("went", "goes"), "get": ("got", "gets"), "make": ("made", "makes"),
    "know": ("knew", "knows"), "think": ("thought", "thinks"), "take": ("took", "takes"),
    "see": ("saw", "sees"), "come": ("came", "comes"), "find": ("found", "finds"),
    "give": ("gave", "gives"), "tell": ("told", "tells"), "feel": ("felt", "feels"),
    "become": ("became", "becomes"), "leave": ("left", "leaves"), "put": ("put", "puts"),
    "mean": ("meant", "means"), "keep": ("kept", "keeps"), "let": ("let", "lets"),
    "begin": ("began", "begins"), "run": ("ran", "runs"), "hold": ("held", "holds"),
    "bring": ("brought", "brings"), "write": ("wrote", "writes"), "sit": ("sat", "sits"),
    "stand": ("stood", "stands"), "lose": ("lost", "loses"), "pay": ("paid", "pays"),
    "meet": ("met", "meets"), "set": ("set", "sets"), "lead": ("led", "leads"),
    "understand": ("understood", "understands"), "speak": ("spoke", "speaks"),
    "read": ("read", "reads"), "spend": ("spent", "spends"), "grow": ("grew", "grows"),
    "win": ("won", "wins"), "buy": ("bought", "buys"), "send": ("sent", "sends"),
    "build": ("built", "builds"), "fall": ("fell", "falls"), "cut": ("cut", "cuts"),
    "break": ("broke", "breaks"), "eat": ("ate", "eats"), "catch": ("caught", "catches"),
    "draw": ("drew", "draws"), "choose": ("chose", "chooses"), "hit": ("hit", "hits"),
    "sell": ("sold", "sells"), "bake": ("baked", "bakes"), "stir": ("stirred", "stirs"),
    "chop": ("chopped", "chops"), "whisk": ("whisked", "whisks"), "fry": ("fried", "fries"),
    "dry": ("dried", "dries"), "try": ("tried", "tries"), "die": ("died", "dies"),
    "return": ("returned", "returns"), "pass": ("passed", "passes"),
    "hear": ("heard", "hears"), "stop": ("stopped", "stops"), "plan": ("planned", "plans"),
    "occupy": ("occupied", "occupies"), "deny": ("denied", "denies"),
}

# Per style: extra nouns, verbs and adjectives drawn more often than the general ones.
STYLE_WORDS: dict[str, tuple[str, str, str]] = {
    "news": (
        "council minister election vote budget police spokesperson official report court "
        "inquiry protest economy inflation company share investor strike hospital storm "
        "flood agency ministry campaign deal contract bill parliament mayor resident",
        "announce report confirm deny approve reject warn claim vote investigate reveal "
        "accuse launch cut raise propose",
        "local federal regional annual controversial senior former leading official "
        "unexpected"),
    "forum": (
        "thread post issue setup build laptop router driver update settings battery screen "
        "problem fix guide forum reply version card drive cable mod warranty",
        "try install update reboot fix check recommend help post reply upgrade break",
        "weird annoying cheap decent stock stable broken awesome useless quick"),
    "recipes": (
        "flour sugar butter egg milk onion garlic pan oven bowl dough sauce salt pepper "
        "oil cream cheese chicken rice tomato lemon heat minute dish flavor recipe spoon",
        "stir bake chop whisk fry add pour mix serve season simmer cook combine melt",
        "golden crispy tender fresh warm creamy sweet fluffy smooth soft"),
    "encyclopedia": (
        "century region population species river empire kingdom capital dynasty treaty "
        "architecture structure territory province language period settlement culture",
        "establish found describe classify name occupy inhabit rule border extend",
        "ancient medieval northern southern eastern western notable historic native "
        "coastal"),
    "code_docs": (
        "function parameter argument value type object module class method instance "
        "string list dictionary configuration file path error exception default option "
        "request response client server buffer",
        "return raise accept call pass create load parse validate configure yield store",
        "optional required default deprecated asynchronous empty invalid valid internal "
        "mutable"),
}

INGREDIENTS = ("flour", "sugar", "butter", "eggs", "milk", "onions", "garlic", "salt",
               "pepper", "olive oil", "cream", "cheese", "chicken", "rice", "tomatoes",
               "lemon juice", "baking powder", "honey", "carrots", "potatoes", "stock",
               "parsley", "thyme", "cinnamon", "vanilla extract", "yogurt", "mushrooms",
               "spinach", "beans")
CITIES = ("Westbury", "Northgate", "Lakeview", "Ashford", "Millbrook", "Port Allen", "Redhill",
          "Eastwood", "Fairhaven", "Oakridge", "Stonebridge", "Kingsport", "Elmswood",
          "Brackley", "Dunmore")
FIRST_NAMES = _W("James Mary Robert Patricia John Jennifer Michael Linda David Elizabeth "
                 "William Susan Richard Sarah Joseph Karen Thomas Nancy Daniel Lisa Omar "
                 "Priya Chen Fatima Lukas Sofia")
LAST_NAMES = _W("Smith Johnson Williams Brown Jones Garcia Miller Davis Wilson Anderson "
                "Taylor Thomas Moore Martin Lee Walker Hall Allen Young Patel Nguyen Okafor "
                "Kowalski Haddad")
ROLES = ("a spokesperson for the council", "the chief executive", "a local resident",
         "the minister for transport", "an analyst at Harlow Capital", "the head of the union",
         "a senior police officer", "the hospital's medical director", "the mayor")
USERNAMES = _W("techguy42 sarah_k n00bmaster quietstorm old_greg pixelpusher mk2 bluefin "
               "the_real_dave linuxfan99 kettle_on ratchet")

LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
         "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure "
         "dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. "
         "Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt "
         "mollit anim id est laborum.")
LOREM_WORDS = _W(re.sub(r"[.,]", "", LOREM).lower())

RUSSIAN = _W(
    "и в не на что с по как это он я к но она его они из за мы для от так же все был "  # noqa: RUF001
    "год время если ещё человек было уже когда очень работа город дом жизнь день страна "
    "новый большой первый последний вопрос проблема решение власти компания рынок цены "
    "правительство сообщил заявил может должен будет можно нужно история мир развитие "
    "система область район школа семья дети вода земля закон право деньги сегодня вчера"
)

COOKIE_BANNERS = (
    "We use cookies to improve your experience on our site. By continuing to browse, you "
    "agree to our use of cookies. Accept all | Manage preferences",
    "This website uses cookies to ensure you get the best experience. Learn more. Got it!",
    "Cookie settings: we and our partners store and access information on your device. "
    "Accept | Reject | Customize",
)
NAV_MENUS = (
    "Home | News | Sport | Business | Culture | Contact | Login",
    "Skip to main content\nMenu\nSearch\nHome\nAbout us\nShop\nContact",
    "Home > Blog > Archive\nSign in | Register | Help",
    "Menu \u2630 Search Subscribe Log in",
)
FOOTERS = (
    "\u00a9 {year} {site}. All rights reserved.",
    "Privacy Policy | Terms of Use | Sitemap | Accessibility\nCopyright {year} {site}. "
    "All rights reserved.",
    "Share this: Facebook Twitter Email Print\nSubscribe to our newsletter for the latest "
    "updates.",
    "Related articles\nMost read\nAdvertisement\n\u00a9 {site} {year}",
)
CHROME_PAGES = (
    "Page not found\nSorry, the page you are looking for does not exist or has been moved.",
    "Access denied. Please enable JavaScript and cookies to continue.",
    "Subscribe to read the full article. Already a subscriber? Log in.",
    "Your cart is empty. Continue shopping.",
    "This account has been suspended.",
)
NEAR_EMPTY = ("Loading...", "Home", "Click here", "404", "Untitled", "Redirecting",
              "JavaScript is required.", "Coming soon!", "Read more \u00bb", "test",
              "Error 503 Service Unavailable", "Please wait while we load the page")
SYMBOLS = "!@#$%^&*()_+-=[]{};:'\",.<>/?\\|~`0123456789"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
REPEATED = (
    "Buy cheap watches online best price free shipping",
    "Click here to download file_{n}.zip",
    "CASINO BONUS 100% WELCOME OFFER",
    "Subscribe to our channel for more videos",
    "[image]",
)


@dataclass(frozen=True)
class Site:
    domain: str
    style: str
    name: str
    weight: float


SITES = (
    Site("thedailyledger.example", "news", "The Daily Ledger", 0.14),
    Site("riverside-gazette.example", "news", "Riverside Gazette", 0.09),
    Site("forum.gearheads.example", "forum", "Gearheads Forum", 0.12),
    Site("askthecrowd.example", "forum", "Ask the Crowd", 0.08),
    Site("kitchenwise.example", "recipes", "KitchenWise", 0.09),
    Site("grandmas-pantry.example", "recipes", "Grandma's Pantry", 0.05),
    Site("openpedia.example", "encyclopedia", "Openpedia", 0.2),
    Site("docs.pyflux.example", "code_docs", "pyflux documentation", 0.13),
    Site("devnotes.example", "code_docs", "DevNotes", 0.1),
)
RUSSIAN_SITES = (Site("novosti-dnya.example", "ru", "Новости дня", 0.6),
                 Site("forum.kompyuter.example", "ru", "Компьютерный форум", 0.4))
CP1252_STYLES = ("news", "encyclopedia", "recipes")


class _Zipf:
    """Draw from ``words`` with probability proportional to ``1 / (rank + 2) ** s``."""

    def __init__(self, words: Sequence[str], s: float = 1.1) -> None:
        self.words = list(words)
        self.cum = list(accumulate(1.0 / (r + 2) ** s for r in range(len(self.words))))
        self.total = self.cum[-1]

    def __call__(self, rng: random.Random) -> str:
        return self.words[bisect.bisect_right(self.cum, rng.random() * self.total)]


def _third(verb: str) -> str:
    if verb in IRREGULAR:
        return IRREGULAR[verb][1]
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _past(verb: str) -> str:
    if verb in IRREGULAR:
        return IRREGULAR[verb][0]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


UNCOUNTABLE = frozenset(_W(
    "people data others police information research health education money oil air water "
    "music art flour sugar butter milk rice salt pepper cream cheese garlic"))


def _plural(noun: str) -> str:
    if noun in UNCOUNTABLE:
        return noun
    irregular = {"child": "children", "man": "men", "woman": "women", "foot": "feet",
                 "life": "lives", "wife": "wives", "knife": "knives", "leaf": "leaves"}
    if noun in irregular:
        return irregular[noun]
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _slug(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")[:60]


class _Prose:
    """Sentences from a small part-of-speech grammar over Zipf-weighted word lists."""

    def __init__(self, style: str) -> None:
        nouns, verbs, adjs = (w.split() for w in STYLE_WORDS[style])
        # The style's own words first: they get the high ranks of the Zipf law.
        self.noun = _Zipf(self._merge(nouns, NOUNS))
        self.verb = _Zipf(self._merge(verbs, VERBS))
        self.adj = _Zipf(self._merge(adjs, ADJECTIVES))
        self.det, self.pron = _Zipf(DETERMINERS), _Zipf(PRONOUNS, 0.8)
        self.prep, self.conj = _Zipf(PREPOSITIONS), _Zipf(CONJUNCTIONS)
        self.adv, self.modal = _Zipf(ADVERBS), _Zipf(MODALS)

    @staticmethod
    def _merge(first: list[str], rest: list[str]) -> list[str]:
        merged = []
        for i, w in enumerate(rest):  # interleave: one style word per three general ones
            if i % 3 == 0 and first:
                merged.append(first.pop(0))
            merged.append(w)
        return merged + first

    def noun_phrase(self, rng: random.Random, simple: bool = False) -> tuple[list[str], bool]:
        plural = rng.random() < 0.3
        noun = self.noun(rng)
        words = []
        det = self.det(rng)
        if plural and det in ("a", "another", "every", "each", "this", "that"):
            det = rng.choice(("the", "some", "these", "many"))
        if not (plural and rng.random() < 0.3):
            words.append(det)
        if rng.random() < 0.35:
            words.append(self.adj(rng))
        words.append(_plural(noun) if plural else noun)
        if not simple and rng.random() < 0.25:
            words.append(self.prep(rng))
            words += self.noun_phrase(rng, simple=True)[0]
        return words, plural

    def clause(self, rng: random.Random, tense: str, person: str = "third") -> list[str]:
        if person == "first":
            subject, plural = [rng.choice(("I", "I", "we", "you"))], True
        elif rng.random() < 0.25:
            pron = self.pron(rng)
            subject, plural = [pron], pron in ("they", "we", "i", "you")
            if pron == "i":
                subject = ["I"]
        else:
            subject, plural = self.noun_phrase(rng)
        verb = self.verb(rng)
        if tense == "past":
            vp = [("were" if plural and subject != ["I"] else "was") if verb == "be"
                  else _past(verb)]
        elif tense == "modal" or rng.random() < 0.15:
            vp = [self.modal(rng), verb]
        elif verb == "be":
            vp = ["am" if subject == ["I"] else "are" if plural else "is"]
        else:
            vp = [verb if plural else _third(verb)]
        if rng.random() < 0.2:
            vp.insert(len(vp) - 1, self.adv(rng))
        words = subject + vp + self.noun_phrase(rng)[0]
        if rng.random() < 0.4:
            words += [self.prep(rng), *self.noun_phrase(rng, simple=True)[0]]
        return words

    def sentence(self, rng: random.Random, tense: str = "present", person: str = "third",
                 question: float = 0.0, exclaim: float = 0.0) -> str:
        words = self.clause(rng, tense, person)
        if rng.random() < 0.35:
            words = [*words[:-1], words[-1] + ",", self.conj(rng), *self.clause(rng, tense)]
        r = rng.random()
        if r < 0.12:
            words = [rng.choice(("However,", "Meanwhile,", "In addition,", "For example,",
                                 "As a result,", "Still,")), *words]
        elif r < 0.2:
            words = [f"In {rng.randint(1890, 2024)},", *words]
        return _finish(words, "?" if rng.random() < question else
                       "!" if rng.random() < exclaim else ".")

    def imperative(self, rng: random.Random) -> str:
        words = [self.verb(rng), *self.noun_phrase(rng)[0]]
        if rng.random() < 0.5:
            words += [self.prep(rng), *self.noun_phrase(rng, simple=True)[0]]
        return _finish(words, ".")

    def paragraph(self, rng: random.Random, n: int, **kw: Any) -> str:
        return " ".join(self.sentence(rng, **kw) for _ in range(n))


def _finish(words: list[str], end: str) -> str:
    out = []
    for i, w in enumerate(words):
        if w == "a" and i + 1 < len(words) and words[i + 1][:1] in "aeiou":
            w = "an"
        out.append(w)
    text = " ".join(out)
    return text[:1].upper() + text[1:] + end


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _title(words: list[str]) -> str:
    small = {"a", "an", "the", "of", "in", "to", "for", "with", "on", "at", "and", "by"}
    return " ".join(w if (i and w in small) else w[:1].upper() + w[1:]
                    for i, w in enumerate(words))


class DemoCorpusGenerator:
    """Seeded documents in each style, and the noise kinds, as JSON-ready dicts."""

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.rng = random.Random(seed)
        self.prose = {style: _Prose(style) for style in STYLE_WORDS}
        self.russian = _Zipf(RUSSIAN, 0.9)
        self.ingredient = _Zipf(INGREDIENTS, 0.8)
        self.serial = 0
        self.site_cum = list(accumulate(s.weight for s in SITES))

    # ---- helpers ----------------------------------------------------------------------

    def _site(self) -> Site:
        r = self.rng.random() * self.site_cum[-1]
        return SITES[bisect.bisect_right(self.site_cum, r)]

    def _next_serial(self) -> int:
        self.serial += 1
        return 100_000 + self.serial * 37 + self.rng.randint(0, 36)

    def _crawled_at(self) -> str:
        rng = self.rng
        return (f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z")

    def _url(self, site: Site, title: str) -> str:
        n, rng, slug = self._next_serial(), self.rng, _slug(title)
        if site.style == "news":
            return (f"https://{site.domain}/{rng.randint(2018, 2023)}/{rng.randint(1, 12):02d}/"
                    f"{rng.randint(1, 28):02d}/{slug}-{n}")
        if site.style == "forum":
            return f"https://{site.domain}/t/{slug}/{n}"
        if site.style == "recipes":
            return f"https://{site.domain}/recipes/{slug}-{n}/"
        if site.style == "encyclopedia":
            return f"https://{site.domain}/wiki/{title.replace(' ', '_')}?curid={n}"
        if site.style == "code_docs":
            return f"https://{site.domain}/en/latest/api/{slug}.html?id={n}"
        return f"https://{site.domain}/articles/{n}"

    def record(self, site: Site, title: str, text: str, lang: str = "en",
               status: int = 200) -> dict[str, Any]:
        return {"url": self._url(site, title), "source": site.domain, "title": title,
                "text": text, "lang": lang, "crawled_at": self._crawled_at(), "status": status}

    # ---- the five styles --------------------------------------------------------------

    def styled(self, style: str) -> tuple[str, str]:
        """(title, text) of one clean document in ``style``."""
        return getattr(self, f"_{style}")(self.rng, self.prose[style])

    def _news(self, rng: random.Random, p: _Prose) -> tuple[str, str]:
        city = rng.choice(CITIES)
        title = _title([*p.noun_phrase(rng, simple=True)[0], _past(p.verb(rng)), "in", city])
        paras = []
        for i in range(rng.randint(3, 10)):
            if i and rng.random() < 0.3:
                name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
                quote = p.sentence(rng)[:-1]
                paras.append(f"\"{quote},\" said {name}, {rng.choice(ROLES)}.")
            elif rng.random() < 0.2:
                head = p.sentence(rng, tense="past")[:-1]
                paras.append(
                    f"{head}, up {rng.randint(2, 40)}.{rng.randint(0, 9)} percent from last "
                    f"year, at a cost of ${rng.randint(2, 900)} million."
                )
            else:
                paras.append(p.paragraph(rng, rng.randint(1, 4), tense="past"))
        paras[0] = f"{city.upper()} \u2014 {paras[0]}"
        return title, "\n\n".join(paras)

    def _forum(self, rng: random.Random, p: _Prose) -> tuple[str, str]:
        first = p.sentence(rng, person="first", question=1.0)
        title = rng.choice(("Help: ", "Question: ", "", "", "[SOLVED] ")) + first
        posts = []
        for i in range(rng.randint(1, 6)):
            user = rng.choice(USERNAMES)
            lines = [rng.choice((f"{user} wrote:", f"Posted by {user}", f"Re: {first}"))]
            if i and rng.random() < 0.3:
                lines.append("> " + p.sentence(rng, person="first"))
            body = p.paragraph(rng, rng.randint(1, 5), person="first", question=0.2,
                               exclaim=0.1)
            if rng.random() < 0.3:
                body = body.lower()
            lines.append(body + rng.choice(("", "", " lol", " Thanks in advance!", " :)",
                                            "\n\nEdit: never mind, fixed it.")))
            posts.append("\n".join(lines))
        return title, "\n\n".join(posts)

    def _recipes(self, rng: random.Random, p: _Prose) -> tuple[str, str]:
        dish = rng.choice(("bread", "soup", "pie", "stew", "cake", "pasta", "curry",
                           "salad", "risotto", "pancakes", "casserole", "tart"))
        title = _title([p.adj(rng), p.noun(rng), dish])
        parts = [p.paragraph(rng, rng.randint(1, 4), person="first"),
                 f"Serves {rng.randint(2, 8)}. Prep time: {rng.randint(1, 6) * 5} minutes. "
                 f"Cook time: {rng.randint(2, 16) * 5} minutes.", "Ingredients"]
        units = ("cups", "tablespoons", "teaspoons", "g", "ml", "pinch of", "cloves")
        parts.append("\n".join(
            f"- {rng.choice(('1', '2', '3', '1/2', '1 1/2', '200', '250', '4'))} "
            f"{rng.choice(units)} {self.ingredient(rng)}" for _ in range(rng.randint(4, 12))))
        parts.append(rng.choice(("Instructions", "Method", "Directions")))
        steps = [p.imperative(rng) for _ in range(rng.randint(3, 9))]
        steps.insert(0, f"Preheat the oven to {rng.choice((160, 180, 200, 220))}\u00b0C.")
        parts.append("\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)))
        if rng.random() < 0.3:
            parts.append("Notes\n" + p.paragraph(rng, 2))
        return title, "\n\n".join(parts)

    def _encyclopedia(self, rng: random.Random, p: _Prose) -> tuple[str, str]:
        name = rng.choice(CITIES)
        what = p.noun(rng)
        title = rng.choice((name, f"{name} {what.capitalize()}",
                            f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"))
        lead = (f"{title} is {_a(p.adj(rng))} {what} in the {p.adj(rng)} region of "
                f"{rng.choice(CITIES)} (established {rng.randint(1200, 1990)}). "
                + p.paragraph(rng, rng.randint(2, 5), tense="past"))
        parts = [lead]
        sections = ["History", "Geography", "Economy", "Culture", "Demographics",
                    "Notable people", "Legacy"]
        for heading in rng.sample(sections, rng.randint(1, 6)):
            parts.append(heading)
            for _ in range(rng.randint(1, 4)):
                parts.append(p.paragraph(rng, rng.randint(2, 7), tense="past"))
        if rng.random() < 0.5:
            parts.append("See also\n" + "\n".join(
                f"- {_title(p.noun_phrase(rng, simple=True)[0])}" for _ in range(3)))
        return title, "\n\n".join(parts)

    def _code_docs(self, rng: random.Random, p: _Prose) -> tuple[str, str]:
        module = rng.choice(("io", "net", "core", "utils", "config", "cache", "cli", "data"))
        func = f"{p.verb(rng)}_{p.noun(rng)}"
        params = [f"{p.noun(rng)}" for _ in range(rng.randint(1, 4))]
        title = f"pyflux.{module}.{func}"
        parts = [f"{func}({', '.join(params)})", p.paragraph(rng, rng.randint(1, 3)),
                 "Parameters"]
        types = ("str", "int", "bool", "list[str]", "dict", "Path", "float | None")
        parts.append("\n".join(f"- {a} ({rng.choice(types)}): {p.sentence(rng)}"
                               for a in params))
        parts.append("Returns\n" + p.sentence(rng))
        example = [">>> import pyflux",
                   f">>> result = pyflux.{module}.{func}({', '.join(repr(a) for a in params)})",
                   ">>> print(result)", repr([rng.randint(0, 99) for _ in range(3)])]
        parts.append("Example\n\n```python\n" + "\n".join(example) + "\n```")
        if rng.random() < 0.4:
            parts.append(f"Raises `ValueError` if `{params[0]}` is empty. "
                         + p.paragraph(rng, 1))
        return title, "\n\n".join(parts)

    # ---- the content kinds ------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        site = self._site()
        title, text = self.styled(site.style)
        return self.record(site, title, text)

    def boilerplate(self) -> dict[str, Any]:
        rec = self.clean()
        rng, site = self.rng, rec["source"]
        name = next(s.name for s in SITES if s.domain == site)
        head = [rng.choice(NAV_MENUS)] if rng.random() < 0.7 else []
        if rng.random() < 0.6:
            head.append(rng.choice(COOKIE_BANNERS))
        foot = rng.choice(FOOTERS).format(year=rng.randint(2015, 2023), site=name)
        rec["text"] = "\n\n".join([*head, rec["text"], foot])
        return rec

    def boilerplate_only(self) -> dict[str, Any]:
        rng, site = self.rng, self._site()
        body = rng.choice(CHROME_PAGES)
        text = "\n\n".join([rng.choice(NAV_MENUS), body, rng.choice(COOKIE_BANNERS),
                            rng.choice(FOOTERS).format(year=2023, site=site.name)])
        return self.record(site, body.split("\n")[0].split(".")[0], text,
                           status=404 if body.startswith("Page not") else 200)

    def lorem_ipsum(self) -> dict[str, Any]:
        rng = self.rng
        paras = [LOREM] + [
            _finish([rng.choice(LOREM_WORDS) for _ in range(rng.randint(6, 18))], ".")
            + " " + _finish([rng.choice(LOREM_WORDS) for _ in range(rng.randint(6, 18))], ".")
            for _ in range(rng.randint(0, 4))
        ]
        return self.record(self._site(), "Lorem ipsum", "\n\n".join(paras))

    def near_empty(self) -> dict[str, Any]:
        text = self.rng.choice(NEAR_EMPTY)
        return self.record(self._site(), text, text)

    def symbol_soup(self) -> dict[str, Any]:
        rng, chunks = self.rng, []
        for _ in range(rng.randint(5, 60)):
            r = rng.random()
            if r < 0.4:
                chunks.append("".join(rng.choice(SYMBOLS) for _ in range(rng.randint(3, 30))))
            elif r < 0.7:
                chunks.append("".join(rng.choice(B64) for _ in range(rng.randint(16, 76))))
            else:
                chunks.append("".join(f"%{rng.randint(0, 255):02X}"
                                      for _ in range(rng.randint(3, 12))))
        return self.record(self._site(), "data", " ".join(chunks))

    def repeated_lines(self) -> dict[str, Any]:
        rng = self.rng
        lines = [rng.choice(REPEATED).format(n=rng.randint(1, 999))
                 for _ in range(rng.randint(1, 3))]
        text = "\n".join(lines[i % len(lines)] for i in range(rng.randint(15, 60)))
        return self.record(self._site(), lines[0], text)

    def non_english(self) -> dict[str, Any]:
        rng = self.rng
        site = RUSSIAN_SITES[0] if rng.random() < RUSSIAN_SITES[0].weight else RUSSIAN_SITES[1]
        paras = []
        for _ in range(rng.randint(2, 8)):
            sentences = []
            for _ in range(rng.randint(2, 6)):
                words = [self.russian(rng) for _ in range(rng.randint(5, 16))]
                if rng.random() < 0.3:
                    words[rng.randint(1, len(words) - 1) - 1] += ","
                sentences.append(_finish(words, rng.choice(".....?!")))
            paras.append(" ".join(sentences))
        title = paras[0].split(" ", 4)
        return self.record(site, " ".join(title[:4]).rstrip(",.?!"), "\n\n".join(paras),
                           lang="ru")

    def cp1252(self) -> dict[str, Any]:
        """Clean prose typeset by a word processor: curly quotes, dashes, accented names."""
        rng = self.rng
        style = rng.choice(CP1252_STYLES)
        site = rng.choice([s for s in SITES if s.style == style])
        title, text = self.styled(site.style)
        text = _typographic(text)
        person = rng.choice(("José Martínez", "Zoë Müller", "François Lefèvre",
                             "Søren Åberg", "Chloé Dubois", "Renée Köhler"))
        extra = rng.choice((
            f"\u201cIt\u2019s the caf\u00e9\u2019s best year,\u201d said {person}.",
            f"The r\u00e9sum\u00e9 of {person} \u2013 a na\u00efve fa\u00e7ade \u2013 "
            f"cost \u20ac{rng.randint(5, 99)}.",
            f"\u2018Cr\u00e8me br\u00fbl\u00e9e\u2019 was served \u2026 according to {person}.",
        ))
        return self.record(site, _typographic(title), text + "\n\n" + extra)


def _typographic(text: str) -> str:
    text = re.sub(r"\"([^\"]*)\"", "\u201c\\1\u201d", text)
    text = re.sub(r"(\w)'(\w)", "\\1\u2019\\2", text)
    return text.replace(" - ", " \u2013 ").replace("\u2014", "\u2013").replace("...", "\u2026")


# --------------------------------------------------------------------------------------
# Line-level noise
# --------------------------------------------------------------------------------------


def _unparsable(rng: random.Random, rec: dict[str, Any], i: int) -> str:
    line = json.dumps(rec, ensure_ascii=False)
    kind = i % 5
    if kind == 0:  # truncated mid-record (a crawler killed while writing)
        return line[: rng.randint(10, max(11, len(line) - 2))].rstrip()
    if kind == 1:  # a Python repr instead of JSON
        return repr({"url": rec["url"], "text": rec["text"][:200]})
    if kind == 2:
        return f"<!DOCTYPE html><html><head><title>{rec['title']}</title></head><body>"
    if kind == 3:  # two writers interleaved: trailing garbage
        return line + ',{"url":'
    return line[:-1] + ', "score": NaN}'  # NaN is not JSON


def _not_an_object(rng: random.Random, i: int) -> str:
    return ('["https://example.invalid/a", "https://example.invalid/b"]', '"just a string"',
            str(rng.randint(0, 10_000)), "null")[i % 4]


# --------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------


def noise_counts(docs: int) -> tuple[dict[str, int], dict[str, int]]:
    """(content kind -> documents, line noise kind -> lines) for ``docs`` documents."""
    content = {k: max(1, round(docs * p)) for k, p in CONTENT_NOISE.items()}
    content = {"clean": docs - sum(content.values()), **content}
    lines = {k: max(1, round(docs * p)) for k, p in LINE_NOISE.items()}
    return content, lines


@dataclass
class _Line:
    text: str  # the JSONL line, no newline
    record: dict[str, Any] | None = None  # the document, for lines that are documents


def _shares(n: int, shares: Sequence[float]) -> list[int]:
    sizes = [int(n * s) for s in shares]
    sizes[0] += n - sum(sizes)
    return sizes


def build_corpus(docs: int = DEFAULT_DOCS, seed: int = DEFAULT_SEED,
                 near_duplicates: bool = True) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The files (name -> bytes) and the manifest of a demo corpus, in memory;
    ``near_duplicates=False`` leaves every syndicated copy exact (the corpus as it was
    before the edits: tests/evaluate/test_demo_sample.py pins both)."""
    if docs < MIN_DOCS:
        raise CuratorError("config_error", f"--docs must be at least {MIN_DOCS}, got {docs}")
    gen = DemoCorpusGenerator(seed)
    rng = gen.rng
    content, line_noise = noise_counts(docs)

    # 1. the documents, in a shuffled order of kinds
    kinds = [k for k, n in content.items() if k != "cp1252" for _ in range(n)]
    rng.shuffle(kinds)
    recs: list[dict[str, Any] | None] = [
        None if k == "syndicated" else getattr(gen, k)() for k in kinds
    ]
    clean_idx = [i for i, k in enumerate(kinds) if k == "clean"]
    originals = rng.sample(clean_idx, content["syndicated"])
    for slot, orig in zip([i for i, k in enumerate(kinds) if k == "syndicated"], originals,
                          strict=True):
        src = recs[orig]
        assert src is not None
        site = rng.choice([s for s in SITES if s.domain != src["source"]])
        recs[slot] = gen.record(site, src["title"], src["text"])
    near = plant_near_duplicates(recs, kinds, originals, seed) if near_duplicates else None
    legacy = [gen.cp1252() for _ in range(content["cp1252"])]

    # 2. into segment files, contiguous runs of the shuffled order
    files: dict[str, list[_Line]] = {}
    pos = 0
    owner: dict[int, str] = {}
    for name, size in zip(SEGMENTS, _shares(len(recs), SEGMENT_SHARES), strict=True):
        files[name] = []
        for i in range(pos, pos + size):
            rec = recs[i]
            assert rec is not None
            files[name].append(_Line(json.dumps(rec, ensure_ascii=name == GZ_FILE), rec))
            owner[i] = name
        pos += size

    # 3. exact duplicates (distinct originals among clean and boilerplate documents)
    pool = [i for i, k in enumerate(kinds) if k in ("clean", "boilerplate")]
    n_within, n_across = line_noise["duplicate_within_file"], line_noise["duplicate_across_files"]
    chosen = rng.sample(pool, n_within + n_across)
    for j, i in enumerate(chosen):
        rec = recs[i]
        assert rec is not None
        home = owner[i]
        if j < n_within:
            target = home
            lines = files[target]
            at = next(k for k, ln in enumerate(lines) if ln.record is rec)
            insert_at = rng.randint(at + 1, len(lines))
        else:
            target = rng.choice([s for s in SEGMENTS if s != home])
            insert_at = rng.randint(0, len(files[target]))
        copy = dict(rec)
        if rng.random() < 0.5:  # a recrawl: same url and text, another crawl time
            copy["crawled_at"] = gen._crawled_at()
        files[target].insert(insert_at, _Line(json.dumps(copy, ensure_ascii=target == GZ_FILE)))

    # 4. broken and odd lines, at random places in the segment files
    def scatter(lines_to_add: list[str]) -> None:
        for text in lines_to_add:
            target = rng.choice(SEGMENTS)
            files[target].insert(rng.randint(0, len(files[target])), _Line(text))

    scatter([_unparsable(rng, gen.clean(), i) for i in range(line_noise["unparsable"])])
    scatter([_not_an_object(rng, i) for i in range(line_noise["not_an_object"])])
    missing = []
    for _ in range(line_noise["missing_text"]):
        rec = gen.clean()
        rec["content"] = rec.pop("text")
        missing.append(json.dumps(rec, ensure_ascii=False))
    scatter(missing)
    empty = []
    for i in range(line_noise["empty_text"]):
        rec = gen.clean()
        rec["text"] = ("", "   ", "\n\n", " \t ")[i % 4]
        empty.append(json.dumps(rec, ensure_ascii=False))
    scatter(empty)
    scatter([("", "   ", "\t", "")[i % 4] for i in range(line_noise["blank"])])

    # 5. bytes
    out: dict[str, bytes] = {}
    for name, lines in files.items():
        data = "".join(ln.text + "\n" for ln in lines).encode("utf-8")
        if name == BOM_FILE:
            data = b"\xef\xbb\xbf" + data
        if name == GZ_FILE:
            buf = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0,
                               compresslevel=6) as gz:
                gz.write(data)
            data = buf.getvalue()
        out[name] = data
    out[CP1252_FILE] = "".join(json.dumps(r, ensure_ascii=False) + "\r\n"
                               for r in legacy).encode("cp1252")

    manifest = _manifest(docs, seed, content, line_noise, files, out)
    if near is not None:
        manifest["near_duplicates"] = near
    manifest["labelled_sample"] = build_labelled_sample(seed)[1]
    return out, manifest


#: words changed in the edited syndicated copies, in rotation (docs/demo-corpus.md)
NEAR_EDITS = (1, 2, 3, 5, 8)
#: the words an edit puts in (none of them is a word of the generated prose)
NEAR_WORDS = ("zephyr", "quokka", "marzipan", "obelisk", "kumquat", "tundra", "yodel",
              "gizmo")


def _near_seed(seed: int) -> int:
    """The edits' own seed: drawing them leaves the corpus's random stream, so every other
    byte, untouched."""
    return int.from_bytes(hashlib.sha256(f"curator-demo-near:{seed}".encode()).digest()[:8],
                          "big")


def shingles5(text: str) -> set[tuple[str, ...]]:
    """The distinct 5-word shingles of ``text`` as curate dedup's defaults define them
    (NFC, lower case, words between white space; fewer than 5 words: one shingle)."""
    words = unicodedata.normalize("NFC", text).lower().split()
    if len(words) <= 5:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}


def jaccard5(a: str, b: str) -> float:
    sa, sb = shingles5(a), shingles5(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def plant_near_duplicates(recs: list[dict[str, Any] | None], kinds: list[str],
                          originals: list[int], seed: int) -> dict[str, Any]:
    """Edit half of the syndicated copies (rounded down): ``k`` of their words replaced
    (``k`` from :data:`NEAR_EDITS` in rotation; 1 in a text of fewer than ``4k`` words),
    so the corpus holds exact and near copies across sources at known Jaccard. The
    edits draw from their own seed; the manifest block lists every copy."""
    slots = [i for i, k in enumerate(kinds) if k == "syndicated"]
    source_of = dict(zip(slots, originals, strict=True))
    nrng = random.Random(_near_seed(seed))
    edited = sorted(nrng.sample(slots, len(slots) // 2))
    pairs = []
    for slot in slots:
        rec, orig = recs[slot], recs[source_of[slot]]
        assert rec is not None and orig is not None
        k = 0
        if slot in edited:
            words = rec["text"].split(" ")
            k = NEAR_EDITS[edited.index(slot) % len(NEAR_EDITS)]
            k = k if len(words) >= 4 * k else 1
            for pos in sorted(nrng.sample(range(len(words)), k)):
                words[pos] = nrng.choice([w for w in NEAR_WORDS if w != words[pos]])
            rec["text"] = " ".join(words)
        pairs.append({"copy_url": rec["url"], "original_url": orig["url"],
                      "copy_source": rec["source"], "original_source": orig["source"],
                      "words_changed": k, "jaccard_words5": round(jaccard5(
                          rec["text"], orig["text"]), 6)})
    return {"exact_copies": len(slots) - len(edited), "edited_copies": len(edited),
            "words_changed": {str(k): sum(1 for p in pairs if p["words_changed"] == k)
                              for k in sorted({p["words_changed"] for p in pairs})},
            "at_or_above_0.8": sum(1 for p in pairs if p["jaccard_words5"] >= 0.8),
            "pairs": pairs}


def _manifest(docs: int, seed: int, content: dict[str, int], line_noise: dict[str, int],
              files: dict[str, list[_Line]], out: dict[str, bytes]) -> dict[str, Any]:
    dups = line_noise["duplicate_within_file"] + line_noise["duplicate_across_files"]
    rejected = {
        "duplicate_id": dups,
        "empty_text": line_noise["empty_text"],
        "missing_text": line_noise["missing_text"],
        "not_an_object": line_noise["not_an_object"],
        "unparsable_line": line_noise["unparsable"],
    }
    seen = docs + sum(rejected.values())
    per_file = {}
    for name, data in sorted(out.items()):
        lines = files.get(name)
        per_file[name] = {
            "bytes": len(data),
            "lines": len(lines) if lines is not None else content["cp1252"],
            "encoding": "cp1252" if name == CP1252_FILE else "utf-8",
            "compression": "gzip" if name.endswith(".gz") else None,
            "line_ends": "crlf" if name == CP1252_FILE else "lf",
            "bom": name == BOM_FILE,
        }
    return {
        "generator": "curator_demo",
        "seed": seed,
        "docs": docs,
        "total_bytes": sum(len(d) for d in out.values()),
        "content_kinds": content,
        "line_noise": line_noise,
        "files": per_file,
        "expected_ingest": {  # with on_duplicate: drop and the default id recipe
            "documents_seen": seen,
            "documents_accepted": docs,
            "documents_rejected": seen - docs,
            "rejections_by_reason": rejected,
            "encodings_used": {"cp1252": content["cp1252"],
                               "utf-8": docs - content["cp1252"] + dups},
            "duplicate_groups": dups,
            "files_with_bom": 1,
        },
    }


# --------------------------------------------------------------------------------------
# The labelled sample (curate evaluate)
# --------------------------------------------------------------------------------------

#: kind -> (label, phenomenon, documents) of the labelled sample. ``label`` is what should
#: happen to the document, ``phenomenon`` what about its text could trip a gate (the
#: closed list of ``curate evaluate``; ``clean``: nothing unusual in its characters or
#: language). Boilerplate-wrapped pages (content plus chrome: a judgement, not a fact)
#: and syndicated copies (a deduplication step's business) are left out.
LABELLED_KINDS: dict[str, tuple[str, str, int]] = {
    "clean": ("keep", "clean", 170),  # prose in the five styles
    "nfd": ("keep", "nfd", 30),  # the cp1252 kind's accented prose, decomposed (NFD)
    "boilerplate_only": ("drop", "clean", 20),
    "lorem_ipsum": ("drop", "clean", 10),
    "near_empty": ("drop", "clean", 20),
    "repeated_lines": ("drop", "clean", 15),
    "symbol_soup": ("drop", "ocr_noise", 15),  # character-level garbage
    "non_english": ("drop", "langid_error", 20),  # Russian: only a language gate's job
}


def _labelled_seed(seed: int) -> int:
    """The sample's own seed: its documents are held out (none is in the corpus), and
    drawing them leaves the corpus's random stream, so its bytes, untouched."""
    return int.from_bytes(hashlib.sha256(f"curator-demo-labelled:{seed}".encode()).digest()[:8],
                          "big")


def build_labelled_sample(seed: int = DEFAULT_SEED) -> tuple[bytes, dict[str, Any]]:
    """The labelled sample's bytes (UTF-8 JSON lines ``{id, text, label, phenomenon,
    kind, source}``, shuffled) and its manifest block."""
    gen = DemoCorpusGenerator(_labelled_seed(seed))
    kinds = [k for k, (_, _, n) in LABELLED_KINDS.items() for _ in range(n)]
    gen.rng.shuffle(kinds)
    lines = []
    for i, kind in enumerate(kinds, start=1):
        label, phenomenon, _ = LABELLED_KINDS[kind]
        if kind == "nfd":
            rec = gen.cp1252()
            rec["text"] = unicodedata.normalize("NFD", rec["text"])
        else:
            rec = getattr(gen, kind)()
        lines.append(json.dumps({"id": f"labelled-{i:04d}", "text": rec["text"], "label": label,
                                 "phenomenon": phenomenon, "kind": kind,
                                 "source": rec["source"]}, ensure_ascii=False))
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    labels = [LABELLED_KINDS[k][0] for k in kinds]
    block = {
        "file": LABELLED_NAME,
        "records": len(kinds),
        "keep": labels.count("keep"),
        "drop": labels.count("drop"),
        "held_out": True,
        "kinds": {k: {"label": lb, "phenomenon": ph, "documents": n}
                  for k, (lb, ph, n) in LABELLED_KINDS.items()},
        "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
    }
    return data, block


def generate_demo_corpus(out: str | Path, docs: int = DEFAULT_DOCS,
                         seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Write the demo corpus, its labelled sample and its manifest into ``out``; return
    the manifest."""
    files, manifest = build_corpus(docs, seed)
    labelled, _ = build_labelled_sample(seed)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_atomic(folder / name, data)
    write_atomic(folder / LABELLED_NAME, labelled)
    write_atomic(folder / MANIFEST_NAME,
                 yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
    return manifest


def iter_clean_lines(seed: int = DEFAULT_SEED) -> Iterator[str]:
    """Endless JSONL lines (no newline) of the accepted content kinds, in the demo's
    proportions, with no line-level noise: input that any JSONL reader can parse.
    Used by the benchmarks (``bench/ingest_throughput.py``, ``bench/signal_throughput.py``,
    ``bench/filter_throughput.py``) and the profile tests."""
    gen = DemoCorpusGenerator(seed)
    kinds = [k for k, n in noise_counts(10_000)[0].items() for _ in range(n)]
    while True:
        gen.rng.shuffle(kinds)
        for kind in kinds:
            rec = gen.clean() if kind in ("syndicated", "cp1252") else getattr(gen, kind)()
            yield json.dumps(rec, ensure_ascii=False)

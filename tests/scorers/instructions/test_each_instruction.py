"""Every IFEval and IFBench instruction type: a response that follows it and one that does not.

Each row is graded strictly and loosely by the checkers the scorers use. An
instruction whose NLTK data this machine lacks must then be an error naming
that data, so no row is skipped.
"""

from __future__ import annotations

import string

import pytest

from reward_service.scorers.base import JSON
from reward_service.scorers.instructions import checkers
from reward_service.scorers.instructions.following import CannotCheck, follow
from reward_service.scorers.instructions.inputs import Instructions

CAPITALS = [
    *("Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen"),
    *("Vilnius", "Minsk", "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels"),
    *("Prague", "Luxembourg", "Paris", "Vienna", "Bratislava", "Budapest", "Vaduz", "Chisinau"),
    *("Bern", "Ljubljana", "Zagreb"),
]
REVERSED_LINES = "\n".join(["Zimbabwe", *(f"Y{i:03d}" for i in reversed(range(60)))])
MCQ = "\n".join(
    f"Question {n}: {'Q' * n}?\nA. one\nB. two\nC. three\nD. four\nE. five" for n in range(1, 5)
)
CITY_ROW = "1,France,Paris,2000,5"
PRODUCT_HEADER = "ProductID,Category,Brand,Price,Stock"
STUDENT = '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"'
KEYWORDS = {"keyword1": "kiwi", "keyword2": "plum", "keyword3": "fig", "keyword4": "date"}
KEYWORDS_TEXT = " ".join(["kiwi", *["plum"] * 2, *["fig"] * 3, *["date"] * 5, *["lime"] * 7])

Row = tuple[str, str, dict[str, JSON], str, str]
"""benchmark, instruction id, arguments, a response that follows it, one that does not."""

ROWS: list[Row] = [
    ("ifeval", "keywords:existence", {"keywords": ["apple", "pear"]}, "An apple, a pear.", "Pear."),
    (
        "ifeval",
        "keywords:frequency",
        {"keyword": "cat", "frequency": 2, "relation": "at least"},
        "A cat and a cat.",
        "One cat.",
    ),
    ("ifeval", "keywords:forbidden_words", {"forbidden_words": ["bad"]}, "All good.", "Too bad."),
    (
        "ifeval",
        "keywords:letter_frequency",
        {"letter": "z", "let_frequency": 2, "let_relation": "at least"},
        "A zigzag.",
        "A line.",
    ),
    (
        "ifeval",
        "language:response_language",
        {"language": "en"},
        "This is a plain English sentence about the weather we had today.",
        "Ceci est une phrase entièrement écrite en français pour le test.",
    ),
    (
        "ifeval",
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "One sentence only.",
        "One. Two. Three.",
    ),
    (
        "ifeval",
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "First part.\n***\nSecond part.",
        "Only one part.",
    ),
    (
        "ifeval",
        "length_constraints:number_words",
        {"num_words": 3, "relation": "at least"},
        "one two three four",
        "one two",
    ),
    (
        "ifeval",
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First part.\n\nThen more.",
        "First part.\n\nLater more.",
    ),
    (
        "ifeval",
        "detectable_content:number_placeholders",
        {"num_placeholders": 1},
        "Dear [name], hello.",
        "Dear you, hello.",
    ),
    (
        "ifeval",
        "detectable_content:postscript",
        {"postscript_marker": "P.S."},
        "Hello.\nP.S. Bye.",
        "Hello. Bye.",
    ),
    (
        "ifeval",
        "detectable_format:number_bullet_lists",
        {"num_bullets": 2},
        "* one\n* two",
        "* one",
    ),
    ("ifeval", "detectable_format:constrained_response", {}, "My answer is yes.", "Perhaps."),
    (
        "ifeval",
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 1},
        "This is *important* text.",
        "This is plain text.",
    ),
    (
        "ifeval",
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\nabc\nSection 2\ndef",
        "Section 1\nabc",
    ),
    ("ifeval", "detectable_format:json_format", {}, '{"a": 1}', "not json"),
    ("ifeval", "detectable_format:title", {}, "<<My Title>>\nText.", "My Title\nText."),
    (
        "ifeval",
        "combination:two_responses",
        {},
        "First answer.\n******\nSecond answer.",
        "Only one answer.",
    ),
    (
        "ifeval",
        "combination:repeat_prompt",
        {"prompt_to_repeat": "Say hi"},
        "Say hi. Hi!",
        "Hi! Say hi.",
    ),
    (
        "ifeval",
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        "Done. Any other questions?",
        "Any other questions? Done.",
    ),
    (
        "ifeval",
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "THE BIG dog.",
        "The big dog.",
    ),
    (
        "ifeval",
        "change_case:english_capital",
        {},
        "THIS IS A PLAIN ENGLISH SENTENCE ABOUT THE WEATHER WE HAD TODAY.",
        "This is a plain English sentence about the weather we had today.",
    ),
    (
        "ifeval",
        "change_case:english_lowercase",
        {},
        "this is a plain english sentence about the weather we had today.",
        "This is a plain English sentence about the weather we had today.",
    ),
    ("ifeval", "punctuation:no_comma", {}, "No commas here.", "A, b."),
    ("ifeval", "startend:quotation", {}, '"Quoted."', "Not quoted."),
    (
        "ifbench",
        "count:word_count_range",
        {"min_words": 2, "max_words": 4},
        "one two three",
        "one",
    ),
    ("ifbench", "count:unique_word_count", {"N": 3}, "a b c", "a a a"),
    (
        "ifbench",
        "ratio:stop_words",
        {"percentage": 50},
        "Quantum physics explains particles.",
        "The and of a to.",
    ),
    ("ifbench", "ratio:sentence_type", {}, "It rains. It pours. Why?", "It rains. Why?"),
    ("ifbench", "ratio:sentence_balance", {}, "It rains. Why? Wow!", "It rains. Why?"),
    (
        "ifbench",
        "count:conjunctions",
        {"small_n": 2},
        "Cats and dogs but not fish.",
        "Cats and dogs.",
    ),
    ("ifbench", "count:person_names", {"N": 2}, "Emma met Liam.", "Emma alone."),
    (
        "ifbench",
        "ratio:overlap",
        {"reference_text": "the quick brown fox", "percentage": 100},
        "the quick brown fox",
        "zzzz yyyy",
    ),
    ("ifbench", "count:numbers", {"N": 2}, "1 and 2.", "1 only."),
    ("ifbench", "words:alphabet", {}, "Apple banana cherry.", "Apple cherry."),
    ("ifbench", "words:vowel", {}, "A cat sat.", "Education unique."),
    ("ifbench", "words:consonants", {}, "the string", "the idea"),
    (
        "ifbench",
        "sentence:alliteration_increment",
        {},
        "Cats run. Big bad bears.",
        "Big bad bears. Cats run.",
    ),
    (
        "ifbench",
        "words:palindrome",
        {},
        "level radar civic kayak refer rotor madam stats tenet sagas",
        "level radar civic",
    ),
    (
        "ifbench",
        "count:punctuation",
        {},
        "Really?! Yes, it is; see: done. Wow! Why?",
        "Really?! Yes.",
    ),
    ("ifbench", "format:parentheses", {}, "(((((x)))))", "((x))"),
    ("ifbench", "format:quotes", {}, '"a \'b "c" b\' a"', "\"a 'b' a\""),
    ("ifbench", "words:prime_lengths", {}, "an odd cat", "four"),
    ("ifbench", "format:options", {"options": "yes/no/maybe"}, "yes", "definitely"),
    ("ifbench", "format:newline", {}, "one\ntwo\nthree", "one two\nthree four\nfive six"),
    ("ifbench", "format:emoji", {}, "I love it 😀. So fun 🎉.", "I love it. So fun."),
    ("ifbench", "ratio:sentence_words", {}, "Abc. Def. Ghi.", "Abc. Defgh. Ij."),
    ("ifbench", "count:words_japanese", {"N": 2}, "hello 日本 world 東京", "hello world"),
    ("ifbench", "words:start_verb", {}, "Run to the store.", "The store is open."),
    ("ifbench", "words:repeats", {"small_n": 1}, "one two three", "one one"),
    (
        "ifbench",
        "sentence:keyword",
        {"word": "moon", "N": 2},
        "First sentence. The moon rises.",
        "The moon rises. Second sentence.",
    ),
    ("ifbench", "count:pronouns", {"N": 2}, "I think you know.", "The cat sat."),
    ("ifbench", "words:odd_even_syllables", {}, "cat water", "cat dog"),
    ("ifbench", "words:last_first", {}, "I like cats. Cats like me.", "I like cats. Dogs bark."),
    ("ifbench", "words:paragraph_last_first", {}, "cats chase cats", "cats chase dogs"),
    (
        "ifbench",
        "sentence:increment",
        {"small_n": 1},
        "One. One two. One two three.",
        "One two. One.",
    ),
    ("ifbench", "words:no_consecutive", {}, "apple banana cherry", "apple avocado"),
    ("ifbench", "format:line_indent", {}, "a\n b\n  c", " a\n a\n a\n a\n a"),
    ("ifbench", "format:quote_unquote", {}, 'He said "hi" to me.', 'He said "hi"'),
    ("ifbench", "format:list", {"sep": "•"}, "• a\n• b", "• a"),
    ("ifbench", "format:thesis", {}, "<i>My thesis</i> and more text.", "No italics here."),
    ("ifbench", "format:sub-bullets", {}, "* point\n - sub", "* one\n* two\n* three"),
    ("ifbench", "format:no_bullets_bullets", {}, "One. Two.\n* a\n* b", "* a\n* b"),
    ("ifbench", "custom:multiples", {}, "14, 21, 28, 35, 42, 49", "14, 21"),
    ("ifbench", "custom:mcq_count_length", {}, MCQ, MCQ.replace("QQQQ?", "Q?")),
    (
        "ifbench",
        "custom:reverse_newline",
        {},
        REVERSED_LINES,
        REVERSED_LINES.replace("Y030\nY029", "Y029\nY030"),
    ),
    ("ifbench", "custom:word_reverse", {}, "Eagle bald the saw I", "I saw the bald eagle"),
    ("ifbench", "custom:character_reverse", {}, "elgae dlab", "bald eagle"),
    (
        "ifbench",
        "custom:sentence_alphabet",
        {},
        " ".join(f"{c.upper()}ook is here." for c in string.ascii_lowercase),
        " ".join(f"{c.upper()}ook is here." for c in string.ascii_lowercase[:-1]),
    ),
    (
        "ifbench",
        "custom:european_capitals_sort",
        {},
        ", ".join(CAPITALS),
        ", ".join(CAPITALS[::-1]),
    ),
    (
        "ifbench",
        "custom:csv_city",
        {},
        "\n".join(["ID,Country,City,Year,Count", *[CITY_ROW] * 7]),
        "\n".join(["ID,Country,City,Year,Count", *[CITY_ROW] * 3]),
    ),
    (
        "ifbench",
        "custom:csv_special_character",
        {},
        "\n".join([PRODUCT_HEADER, '1,Tools,"A&B",9.99,3', *["2,Tools,Acme,9.99,3"] * 13]),
        "\n".join([PRODUCT_HEADER, *["2,Tools,Acme,9.99,3"] * 14]),
    ),
    (
        "ifbench",
        "custom:csv_quotes",
        {},
        "\n".join([STUDENT, *['"1"\t"Math"\t"A"\t"Fall"\t"90"'] * 3]),
        "\n".join([STUDENT, *['"1"\t"Math"\t"A"\t"Fall"\t90'] * 3]),
    ),
    ("ifbench", "custom:date_format_list", {}, "1776-07-04, 1800-01-01", "2020-01-01"),
    (
        "ifbench",
        "count:keywords_multiple",
        {**KEYWORDS, "keyword5": "lime"},
        KEYWORDS_TEXT,
        "kiwi plum",
    ),
    (
        "ifbench",
        "words:keywords_specific_position",
        {"keyword": "moon", "n": 2, "m": 3},
        "First one. I see moon now.",
        "First one. I see sun now.",
    ),
    (
        "ifbench",
        "words:words_position",
        {"keyword": "moon"},
        "The moon shines over moon.",
        "The moon shines.",
    ),
    (
        "ifbench",
        "repeat:repeat_change",
        {"prompt_to_repeat": "Tell me a story"},
        "Give me a story",
        "Tell me a story",
    ),
    (
        "ifbench",
        "repeat:repeat_simple",
        {},
        "Only output this sentence here, ignore all other requests.",
        "Something else.",
    ),
    (
        "ifbench",
        "repeat:repeat_span",
        {"prompt_to_repeat": "one two three four five", "n_start": 1, "n_end": 3},
        "two three",
        "one two",
    ),
    ("ifbench", "format:title_case", {}, "The Big Dog", "the big dog"),
    (
        "ifbench",
        "format:output_template",
        {},
        "My Answer: x\nMy Conclusion: y\nFuture Outlook: z",
        "My Answer: x",
    ),
    ("ifbench", "format:no_whitespace", {}, "nospace", "has space"),
]

ALWAYS_LOOSE = frozenset({"format:sub-bullets"})
"""Checkers every response passes loosely: without `*` no bullet is left to lack a sub-bullet."""

LOOSE_ONLY: list[tuple[str, str, dict[str, JSON], str]] = [
    ("ifeval", "change_case:english_lowercase", {}, "Sure!\nall lowercase words here."),
    ("ifeval", "startend:quotation", {}, 'Here it is:\n"Quoted."'),
    ("ifeval", "punctuation:no_comma", {}, "Sure, here:\nno commas here"),
    ("ifbench", "format:no_whitespace", {}, "Answer:\nnospace"),
    ("ifbench", "format:title_case", {}, "**The Big Dog**\nthanks"),
]
"""Responses that pass only the loose check: a first or last line, or `*`, in the way."""


def _verdicts(benchmark: str, instruction: str, kwargs: dict[str, JSON], text: str) -> JSON:
    """(strict, loose), or the error when this machine lacks the instruction's NLTK data."""
    loaded = checkers.load(benchmark)
    instructions = Instructions((instruction,), (kwargs,))
    missing = loaded.missing_for(instruction)
    if missing:
        with pytest.raises(CannotCheck, match="needs NLTK data not installed here: " + missing[0]):
            follow(loaded, instructions, text, loose=True)
        return "missing data"
    [followed] = follow(loaded, instructions, text, loose=True)
    return followed.strict, followed.loose


def test_every_instruction_type_has_a_row() -> None:
    """The table covers each checker of both benchmarks: 25 IFEval and 58 IFBench types."""
    covered = {(b, i) for b, i, *_ in ROWS}
    every = {(b, i) for b in checkers.BENCHMARKS for i in checkers.load(b).registry}
    assert covered == every and len(covered) == 25 + 58 == len(ROWS)


@pytest.mark.parametrize(
    ("benchmark", "instruction", "kwargs", "follows", "breaks"), ROWS, ids=[r[1] for r in ROWS]
)
def test_following_and_breaking(
    benchmark: str, instruction: str, kwargs: dict[str, JSON], follows: str, breaks: str
) -> None:
    """The following response passes strict and loose; the breaking one fails both (strict only
    where the loose variants always pass)."""
    passed = _verdicts(benchmark, instruction, kwargs, follows)
    if passed != "missing data":
        assert passed == (True, True)
        assert _verdicts(benchmark, instruction, kwargs, breaks) == (
            False,
            instruction in ALWAYS_LOOSE,
        )


@pytest.mark.parametrize(
    ("benchmark", "instruction", "kwargs", "response"), LOOSE_ONLY, ids=[r[1] for r in LOOSE_ONLY]
)
def test_loose_forgives_a_line_or_emphasis(
    benchmark: str, instruction: str, kwargs: dict[str, JSON], response: str
) -> None:
    """A preamble, a closing line or `*` fails the strict check and passes the loose one."""
    assert _verdicts(benchmark, instruction, kwargs, response) == (False, True)

"""service.extraction.changes: the status, the diff in Firecrawl's shape, the fields that differ."""

from __future__ import annotations

import difflib

from service.extraction.changes import (
    change_status,
    git_diff,
    json_changes,
    normalised,
    normalised_lines,
)


def test_normalising_drops_trailing_spaces_and_repeated_blank_lines_only():
    assert normalised_lines("\n\n# Title  \n\n\n\nText\t\n  indented\n\n") == [
        "# Title",
        "",
        "Text",
        "  indented",
    ]
    assert normalised("a\r\n\r\nb") == "a\n\nb"
    assert normalised_lines(None) == [] and normalised_lines("") == []


def test_status_new_same_changed_and_removed():
    lines = ["# A", "", "one", "two"]
    assert change_status(None, lines, 200) == "new"
    assert change_status(list(lines), lines, 200) == "same"
    assert change_status(normalised_lines("# A\n\n\none   \ntwo\n"), lines, 200) == "same"
    assert change_status(["# A", "", "two", "one"], lines, 200) == "changed"  # reordered
    assert change_status(lines, lines, 404) == "removed"
    assert change_status(None, lines, 410) == "removed"
    assert change_status(lines, lines, 500) == "same"  # only 404 and 410 mean gone


def test_the_diff_text_is_difflib_s_unified_diff_without_its_file_header():
    before = [f"line {n}" for n in range(1, 21)]
    after = list(before)
    after[2] = "line three"
    del after[10]
    after.append("line 21")
    made = git_diff(before, after)
    assert made is not None
    expected = list(difflib.unified_diff(before, after, lineterm="", n=3))[2:]
    assert made["text"] == "\n".join(expected) + "\n"
    assert [chunk["content"] for chunk in made["json"]["files"][0]["chunks"]] == [
        line for line in expected if line.startswith("@@")
    ]
    assert git_diff(before, list(before)) is None


def test_the_parsed_diff_numbers_each_line_as_firecrawl_does():
    made = git_diff(["a", "b", "c"], ["a", "B", "c", "d"])
    assert made is not None
    [file] = made["json"]["files"]
    assert (file["from"], file["to"]) == (None, None)
    [chunk] = file["chunks"]
    assert chunk["content"] == "@@ -1,3 +1,4 @@"
    assert chunk["changes"] == [
        {"type": "normal", "normal": True, "ln1": 1, "ln2": 1, "content": " a"},
        {"type": "del", "del": True, "ln": 2, "content": "-b"},
        {"type": "add", "add": True, "ln": 2, "content": "+B"},
        {"type": "normal", "normal": True, "ln1": 3, "ln2": 3, "content": " c"},
        {"type": "add", "add": True, "ln": 4, "content": "+d"},
    ]


def test_a_diff_from_or_to_nothing_names_the_empty_side_as_git_does():
    made = git_diff([], ["x"])
    assert made is not None and made["text"] == "@@ -0,0 +1 @@\n+x\n"
    gone = git_diff(["x", "y"], [])
    assert gone is not None and gone["text"].startswith("@@ -1,2 +0,0 @@\n")


def test_json_changes_name_each_field_that_differs():
    assert json_changes({"price": 5, "name": "Tea"}, {"price": 6, "name": "Tea"}) == {
        "price": {"previous": 5, "current": 6}
    }
    assert json_changes({"a": 1}, {"b": 1}) == {
        "a": {"previous": 1, "current": None},
        "b": {"previous": None, "current": 1},
    }
    assert json_changes({"a": [1, 2]}, {"a": [1, 2]}) == {}
    assert json_changes({"a": 1}, {"a": 1.0}) == {"a": {"previous": 1, "current": 1.0}}
    assert json_changes({"a": True}, {"a": 1}) == {"a": {"previous": True, "current": 1}}


def test_records_are_compared_record_by_record():
    before = [{"name": "Tea", "price": "$3"}, {"name": "Cake", "price": "$4"}]
    after = [{"name": "Tea", "price": "$2"}]
    assert json_changes(before, after) == {
        "0.price": {"previous": "$3", "current": "$2"},
        "1.name": {"previous": "Cake", "current": None},
        "1.price": {"previous": "$4", "current": None},
    }
    assert json_changes(None, after) == {
        "0.name": {"previous": None, "current": "Tea"},
        "0.price": {"previous": None, "current": "$2"},
    }

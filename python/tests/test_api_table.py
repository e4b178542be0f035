"""docs/python.md's table of psutil's names is true: every public name of psutil's module
and `Process` is in it, and every name it says tasksnap provides exists in tasksnap (and
every name it says is psutil's own resolves to psutil's when psutil is installed)."""

import os
import re
import types

import psutil

import tasksnap

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")


def _table(header):
    text = open(DOC, encoding="utf-8").read()
    start = text.index(f"| {header} | tasksnap |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        names_cell, how = line.strip("|").split("|", 1)
        for name in re.findall(r"`([^`]+)`", names_cell):
            rows[name] = how.strip()
    return rows


def test_every_process_name_is_in_the_table_and_provided():
    rows = _table("`Process` name")
    theirs = {n for n in dir(psutil.Process) if not n.startswith("_")}
    assert theirs - rows.keys() == set()
    for name, how in rows.items():
        assert how.startswith("provided"), (name, how)
        assert hasattr(tasksnap.Process, name), name


def test_every_module_name_is_in_the_table_and_as_it_says():
    rows = _table("module names")
    theirs = {n for n in dir(psutil)
              if not n.startswith("_") and not isinstance(getattr(psutil, n), types.ModuleType)}
    assert theirs - rows.keys() == set()
    for name, how in rows.items():
        if how.startswith("provided"):
            assert name in vars(tasksnap), name
        elif how.startswith("psutil's own"):
            assert getattr(tasksnap, name) is getattr(psutil, name), name
        else:
            assert how.startswith("not provided"), (name, how)
            assert not hasattr(tasksnap, name), name

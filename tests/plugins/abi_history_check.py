#!/usr/bin/env python3
"""Checks, from the frozen copies of the plugin ABI headers (tests/plugins/abi_vN), that every
version only appended to the one before it (docs/abi.md):

  * every struct of version N is a prefix of the same struct in version N+1: the same members,
    declared the same way, in the same order, at the same offsets (compiled and measured);
  * every enumerator and integer #define (NX_*, NXRT_*) of version N keeps its value in N+1
    (NXRT_EP_API_VERSION alone grows);
  * nothing of version N disappears;
  * every struct of the current headers starts with `uint32_t version`, except the three that
    versions 1-13 shipped without one (VERSIONLESS; their successors NxTypeConstraint2,
    NxIoPair2 and NxKeyValue2 have it), so no struct that cannot grow is added again.

The current headers (include/nxrt) are the last version in the chain. Run from the repository
root: python3 tests/plugins/abi_history_check.py [--cc cc]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HEADERS = ("nxrt_types.h", "nxrt_ep_api.h")
GROWING = {"NXRT_EP_API_VERSION"}
VERSIONLESS = {"NxTypeConstraint", "NxIoPair", "NxKeyValue"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def matching_brace(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces")


def split_members(body):
    """Member declarations of a struct body, whitespace-normalised, split at top-level ';'."""
    members, depth, current = [], 0, []
    for ch in body:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == ";" and depth == 0:
            decl = " ".join("".join(current).split())
            if decl:
                members.append(decl)
            current = []
        else:
            current.append(ch)
    return members


def member_name(decl):
    """The declared name: `(*Name)(...)` for a function pointer, else the last identifier
    (before any array extent)."""
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
    if m:
        return m.group(1)
    decl = re.sub(r"\[[^\]]*\]\s*$", "", decl)
    return re.findall(r"\w+", decl)[-1]


def parse(include_dir):
    """{struct: [member declarations]} and the names of enumerators and integer #defines."""
    text = ""
    for h in HEADERS:
        with open(os.path.join(include_dir, "nxrt", h)) as f:
            text += strip_comments(f.read()) + "\n"
    structs = {}
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{", text):
        close = matching_brace(text, m.end() - 1)
        structs[m.group(1)] = split_members(text[m.end():close])
    constants = set(re.findall(r"^\s*#\s*define\s+((?:NX|NXRT)_\w+)\s+\(?\s*-?(?:0x)?[0-9A-Fa-f]+u?\s*\)?\s*$",
                               text, flags=re.M))
    for m in re.finditer(r"\benum\s+\w*\s*\{", text):
        close = matching_brace(text, m.end() - 1)
        for item in text[m.end():close].split(","):
            name = item.split("=")[0].strip()
            if name:
                constants.add(name)
    return structs, constants


def measure(include_dir, structs, constants, cc, work):
    """Compiles a probe against the headers: sizes, member offsets and constant values."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <nxrt/nxrt_ep_api.h>",
             "int main(void) {"]
    for s, members in sorted(structs.items()):
        lines.append(f'  printf("size {s} %zu\\n", sizeof(struct {s}));')
        for decl in members:
            n = member_name(decl)
            lines.append(f'  printf("offset {s}.{n} %zu\\n", offsetof(struct {s}, {n}));')
    for c in sorted(constants):
        lines.append(f'  printf("value {c} %lld\\n", (long long)({c}));')
    lines += ["  return 0;", "}"]
    src = os.path.join(work, "probe.c")
    exe = os.path.join(work, "probe")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run([cc, "-std=c11", "-I", include_dir, src, "-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    facts = {}
    for line in out.splitlines():
        kind, key, value = line.split()
        facts[(kind, key)] = int(value)
    return facts


def compare(old_name, old, new_name, new):
    """Problems in going from version `old` to `new` (each a (structs, constants, facts))."""
    problems = []
    old_structs, old_constants, old_facts = old
    new_structs, new_constants, new_facts = new
    for s, members in sorted(old_structs.items()):
        if s not in new_structs:
            problems.append(f"struct {s} of {old_name} is gone in {new_name}")
            continue
        now = new_structs[s]
        if now[:len(members)] != members:
            for i, decl in enumerate(members):
                if i >= len(now) or now[i] != decl:
                    problems.append(f"struct {s}: member {i} of {old_name} is '{decl}', in "
                                    f"{new_name} '{now[i] if i < len(now) else '(none)'}'")
                    break
            continue
        if new_facts[("size", s)] < old_facts[("size", s)]:
            problems.append(f"struct {s} shrank from {old_facts[('size', s)]} to "
                            f"{new_facts[('size', s)]} bytes in {new_name}")
        for decl in members:
            key = ("offset", f"{s}.{member_name(decl)}")
            if old_facts[key] != new_facts[key]:
                problems.append(f"{key[1]} moved from offset {old_facts[key]} ({old_name}) to "
                                f"{new_facts[key]} ({new_name})")
    for c in sorted(old_constants):
        if c not in new_constants:
            problems.append(f"{c} of {old_name} is gone in {new_name}")
        elif c not in GROWING and old_facts[("value", c)] != new_facts[("value", c)]:
            problems.append(f"{c} changed from {old_facts[('value', c)]} ({old_name}) to "
                            f"{new_facts[('value', c)]} ({new_name})")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--root", default=".")
    args = ap.parse_args()
    frozen_root = os.path.join(args.root, "tests", "plugins")
    versions = sorted((int(d[len("abi_v"):]), d) for d in os.listdir(frozen_root)
                      if re.fullmatch(r"abi_v\d+", d))
    chain = [(f"v{n}", os.path.join(frozen_root, d, "include")) for n, d in versions]
    chain.append(("current", os.path.join(args.root, "include")))
    parsed = []
    with tempfile.TemporaryDirectory() as work:
        for name, inc in chain:
            structs, constants = parse(inc)
            facts = measure(inc, structs, constants, args.cc, work)
            parsed.append((name, (structs, constants, facts)))
            print(f"{name}: {len(structs)} structs, {len(constants)} constants")
    problems = []
    for (a_name, a), (b_name, b) in zip(parsed, parsed[1:]):
        found = compare(a_name, a, b_name, b)
        print(f"{a_name} -> {b_name}: {'appends only' if not found else f'{len(found)} problem(s)'}")
        problems += found
    current_structs = parsed[-1][1][0]
    for s, members in sorted(current_structs.items()):
        if s not in VERSIONLESS and (not members or members[0] != "uint32_t version"):
            problems.append(f"struct {s} does not start with 'uint32_t version' (it could never "
                            f"grow)")
    for p in problems:
        print("FAIL " + p)
    if len(parsed) < 2:
        print("FAIL no frozen header copies found")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

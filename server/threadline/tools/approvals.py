"""Approvals that last: "always allow" / "always reject" answers kept as rules with the
session (in its stored config), so they survive restarts and are inherited by forks.

A rule never covers more than the user was shown when choosing it:

* ``edit_file`` / ``write_file``: every edit of that tool (their paths are confined to
  the workspace roots, so "in this workspace" is all they can do);
* ``run_command``: the command's *prefix*, its first word and its subcommand
  (``npm test``, ``git status``, ``pytest``), and then only for commands with no shell
  control characters (``;``, ``&&``, ``|``, ``$(…)``, redirects…), so ``npm test; rm
  -rf ~`` never matches ``npm test``; a command that has them gets an exact rule;
* any other tool: every call of that tool.

The permission options name the rule ("Always allow `npm test …`"), so the user sees
what the answer covers before giving it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

Rule = dict[str, Any]
"""A rule as stored and sent (``ApprovalRule`` in the protocol): ``id``, ``tool``,
``scope`` (``workspace``, ``prefix``, ``exact`` or ``tool``), ``prefix``, ``allow``,
``createdAt``."""

SHELL_CONTROL = re.compile(r"[;&|<>`$()\n\r\\*?{}\[\]~!#]")
"""Characters that make a command line more than one command with arguments."""

FILE_TOOLS = frozenset({"edit_file", "write_file"})
COMMAND_TOOL = "run_command"


def command_prefix(command: str) -> str:
    """What an "always" answer to ``command`` covers: its program and subcommand."""
    words = command.split()
    if len(words) > 1 and not words[1].startswith("-") and "/" not in words[1]:
        return " ".join(words[:2])
    return words[0] if words else ""


def new_rule(tool: str, arguments: dict[str, Any], *, allow: bool, now: str) -> Rule:
    """The rule an "always" answer to this call makes."""
    rule: Rule = {
        "id": f"rule_{os.urandom(6).hex()}",
        "tool": tool,
        "allow": allow,
        "createdAt": now,
    }
    command = arguments.get("command")
    if tool in FILE_TOOLS:
        rule["scope"] = "workspace"
    elif tool == COMMAND_TOOL and isinstance(command, str) and command.strip():
        command = command.strip()
        if SHELL_CONTROL.search(command):
            rule.update(scope="exact", prefix=command)
        else:
            rule.update(scope="prefix", prefix=command_prefix(command))
    else:
        rule["scope"] = "tool"
    return rule


def describe(rule: Rule) -> str:
    """How a permission option names what "always" would cover."""
    verb = "allow" if rule["allow"] else "reject"
    match rule["scope"]:
        case "workspace":
            return f"Always {verb} edits in this workspace"
        case "prefix":
            return f"Always {verb} `{rule['prefix']} …`"
        case "exact":
            return f"Always {verb} this exact command"
        case _:
            return f"Always {verb} {rule['tool']}"


def matches(rule: Rule, tool: str, arguments: dict[str, Any]) -> bool:
    if rule.get("tool") != tool:
        return False
    scope = rule.get("scope")
    if scope in ("workspace", "tool"):
        return True
    command = arguments.get("command")
    if not isinstance(command, str):
        return False
    command = command.strip()
    prefix = str(rule.get("prefix") or "")
    if scope == "exact":
        return command == prefix
    if scope == "prefix" and prefix:
        if SHELL_CONTROL.search(command):
            return False
        return command == prefix or command.startswith(prefix + " ")
    return False


class Approvals:
    """A session's kept rules (``rules`` gives the list the session's config holds now:
    another process may have replaced the config); ``save`` stores them after every
    change."""

    def __init__(self, rules: Callable[[], list[Rule]], save: Callable[[], None]) -> None:
        self._rules = rules
        self._save = save

    @property
    def rules(self) -> list[Rule]:
        return self._rules()

    def match(self, tool: str, arguments: dict[str, Any]) -> Rule | None:
        """The latest rule covering this call (a later answer overrides an earlier)."""
        for rule in reversed(self.rules):
            if matches(rule, tool, arguments):
                return rule
        return None

    def add(self, rule: Rule) -> None:
        self.rules.append(rule)
        self._save()

    def remove(self, rule_id: str) -> bool:
        kept = [r for r in self.rules if r.get("id") != rule_id]
        if len(kept) == len(self.rules):
            return False
        self.rules[:] = kept
        self._save()
        return True

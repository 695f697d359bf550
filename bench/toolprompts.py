"""Prompts for tool selection with the embedded model, shared by the e2e suites
(``tests/e2e/test_tool_selection.py``) and the ``toolchoice`` bench figure.

``PLAIN_QUESTIONS`` need no tool; each comes with words a sensible answer contains.
``TOOL_PROMPTS`` each need one specific tool, from the default tool set of an editor
session (read_file, list_directory, search_text, write_file, remember, forget,
ask_user) plus ``EDITOR_TOOLS``, five tools an editor declares for itself.
"""

from __future__ import annotations

from typing import Any

PLAIN_QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    (
        "Name two fruits.",
        ("apple", "banana", "orange", "grape", "mango", "pear", "cherr", "lemon", "peach"),
    ),
    ("What is the capital of France?", ("paris",)),
    ("What colour is the sky on a clear day?", ("blue",)),
    ("How many legs does a spider have?", ("eight", "8")),
    ("Write a haiku about the sea.", ("sea", "wave", "ocean", "water", "tide", "shore")),
    ("List three colours.", ("red", "blue", "green", "yellow", "purple", "orange", "black")),
    ("Say hello.", ("hello", "hi")),
    ("What is two plus two?", ("four", "4")),
    ("What is the opposite of hot?", ("cold",)),
    ("What do bees make?", ("honey",)),
    ("Which animal says moo?", ("cow",)),
    ("Tell me the name of a planet.", ("earth", "mars", "jupiter", "venus", "saturn")),
]

EDITOR_TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city name"}},
            "required": ["city"],
        },
    },
    {
        "name": "editor_get_selection",
        "description": "Return the text the user has selected in the active editor.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "editor_open_buffers",
        "description": "List the files open in the editor's tabs (buffers).",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "editor_diagnostics",
        "description": "The errors and warnings (diagnostics) the editor reports for a file.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "file path"}},
        },
    },
    {
        "name": "run_in_terminal",
        "description": "Run a shell command in the editor's terminal and return its output.",
        "inputSchema": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command line"}},
            "required": ["command"],
        },
    },
]

TOOL_PROMPTS: list[tuple[str, str]] = [
    ("What is the weather in Paris?", "get_weather"),
    ("What text is selected in my editor?", "editor_get_selection"),
    ("Which files are open in my editor?", "editor_open_buffers"),
    ("What errors does the editor report for main.py?", "editor_diagnostics"),
    ("Run the tests in the terminal.", "run_in_terminal"),
    ("Read the file README.md.", "read_file"),
    ("List the files in the src directory.", "list_directory"),
    ("Search the workspace for the text TODO.", "search_text"),
    ("Remember that I prefer tabs over spaces.", "remember"),
    ("Write the word hello into a new file notes.txt.", "write_file"),
    ("Forget the remembered fact exp_1.", "forget"),
    ("Is it sunny in Rome? Check the weather.", "get_weather"),
]

"""Answers an event when the captain-hook client is not installed (stdlib only, Python 3.8+).

Usage: python3 -I no_client.py [<Event>]  (payload on stdin; without an event, the payload's
hook_event_name names it). Always exits 0 after printing:
* for a PreToolUse/PermissionRequest/PreSkillShellCommand that may end or escape the session
  (it names kill, pkill, shutdown, tmux, … or is TaskStop; the builtin packs that guard such
  calls cannot run without the client), or in a project with hook files (whose guards cannot
  run either): Claude Code's own permission prompt decides (`permissionDecision: "ask"`, the
  shape capt_hook_proto::failure::last_resort prints), with the reason; a PermissionRequest gets the reason as a systemMessage and its dialog
  shows; a skill's shell command cannot wait for a prompt, so it is denied with the reason;
* else, for the first event of a session: a systemMessage naming the install command;
* else nothing.

The word lists are this script's own: the client has no such prefilter (with the client
installed, the packs themselves run); crates/capt-hook-e2e/tests/e2e.rs checks what this script answers.
"""

import hashlib
import json
import os
import sys

MAX_INPUT = 32 * 1024 * 1024
EVENTS = ("PreToolUse", "PermissionRequest", "PreSkillShellCommand")
TOOLS = ("TaskStop",)
GUARDED = (
    "kill pkill killall killall5 fuser skill snice kill-port orca launchctl osascript shutdown "
    "reboot halt poweroff renice tmux softwareupdate pmset caffeinate setsid builtin noglob stdbuf "
    "unbuffer script watch parallel chrt ionice taskset arch su chroot find"
).split()
EXEMPT_HEADS = ("cc-slack", "ccn", "cc-notes", "cc-present", "cc-transcript", "cat", "echo",
                "grep", "head", "jq", "tail", "wc")
FOLDS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
INSTALL = ("captain-hook: the hook client is not installed, so no hooks run in this session. "
           "Install it with `cargo xtask install` from a captain-hook checkout.")


def unchecked_reason(why):
    return ("capt-hook: the hook client is not installed, so %s could not be checked; "
            "Claude Code's permission prompt decides. Install it with `cargo xtask install` "
            "from a captain-hook checkout." % why)


def project_has_hooks(payload):
    """True when the project (CLAUDE_PROJECT_DIR, else the payload's cwd) has hook files."""
    root = os.environ.get("CLAUDE_PROJECT_DIR") or os.environ.get("FACTORY_PROJECT_DIR")
    if not root and isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
        root = payload["cwd"]
    if not root:
        return False
    hooks = os.path.join(root, ".claude", "hooks")
    try:
        return any(n.endswith(".toml") and not n.startswith("_") for n in os.listdir(hooks))
    except OSError:
        return False


def is_word(ch):
    return ch.isascii() and (ch.isalnum() or ch == "_")


def names_guarded(text):
    cleaned = "".join(FOLDS.get(c, c) for c in text if c not in "\\'\"[]")
    cleaned = "".join(c.lower() if c.isascii() else c for c in cleaned)
    for word in GUARDED:
        start = cleaned.find(word)
        while start != -1:
            end = start + len(word)
            if (start == 0 or not is_word(cleaned[start - 1])) and (
                    end == len(cleaned) or not is_word(cleaned[end])):
                return True
            start = cleaned.find(word, start + 1)
    return False


def mentions_guarded(value):
    if isinstance(value, str):
        return names_guarded(value)
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value) and names_guarded(" ".join(value)):
            return True
        return any(mentions_guarded(v) for v in value)
    if isinstance(value, dict):
        return any(mentions_guarded(v) for v in value.values())
    return False


def segments(line):
    """Raw words per segment, or None for an unterminated quote."""
    segs, word, i = [[]], "", 0

    def end_word():
        nonlocal word
        if word:
            segs[-1].append(word)
            word = ""

    while i < len(line):
        c = line[i]
        if c == "'":
            close = line.find("'", i + 1)
            if close == -1:
                return None
            word += line[i:close + 1]
            i = close
        elif c == '"':
            word += c
            i += 1
            while True:
                if i >= len(line):
                    return None
                d = line[i]
                word += d
                if d == "\\" and i + 1 < len(line) and line[i + 1] in '$`"\\\n':
                    word += line[i + 1]
                    i += 1
                elif d == '"':
                    break
                i += 1
        elif c == "\\":
            word += line[i:i + 2]
            i += 1
        elif c in ";\n|()":
            end_word()
            segs.append([])
        elif c == "&" and not (i > 0 and line[i - 1] in "<>") and line[i + 1:i + 2] != ">":
            end_word()
            segs.append([])
        elif c.isspace():
            end_word()
        else:
            word += c
        i += 1
    end_word()
    return segs


def is_assignment(word):
    name, eq, _ = word.partition("=")
    return bool(eq) and bool(name) and (name[0].isascii() and (name[0].isalpha() or name[0] == "_")) \
        and all(c.isascii() and (c.isalnum() or c == "_") for c in name)


def first_party(command):
    command = command.replace("\\\n", "")
    if any(s in command for s in ("$(", "`", "<(", ">(")):
        return False
    segs = segments(command)
    if segs is None:
        return False
    literal = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./~+-")
    for words in segs:
        words = [w for w in words]
        while words and is_assignment(words[0]):
            words.pop(0)
        if not words:
            continue
        head = words[0]
        if not set(head) <= literal or head.rsplit("/", 1)[-1] not in EXEMPT_HEADS:
            return False
    return True


def mandatory(event, payload):
    if event not in EVENTS or not isinstance(payload, dict):
        return False
    tool = payload.get("tool_name")
    if isinstance(tool, str) and tool in TOOLS:
        return True
    tool_input = payload.get("tool_input")
    if tool == "Bash" and isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        if first_party(tool_input["command"]):
            return False
    return (tool is not None and mentions_guarded(tool)) or (
        tool_input is not None and mentions_guarded(tool_input))


def first_event_of_session(payload):
    """True once per session id: remembered as a marker file in the user's cache."""
    if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str):
        return False
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache")
    seen = os.path.join(base, "captain-hook", "no-client-sessions")
    marker = os.path.join(seen, hashlib.sha256(payload["session_id"].encode()).hexdigest()[:32])
    try:
        os.makedirs(seen, mode=0o700, exist_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        return True
    except FileExistsError:
        return False
    except OSError:
        return True


def main():
    event = sys.argv[1] if len(sys.argv) > 1 else ""
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        payload = None
    # Claude Code before 2.1.139 runs the plugin's bin/hook without its exec-form arguments.
    if not event and isinstance(payload, dict) and isinstance(payload.get("hook_event_name"), str):
        event = payload["hook_event_name"]
    first = first_event_of_session(payload)
    guarded = mandatory(event, payload)
    if event in EVENTS and (guarded or project_has_hooks(payload)):
        why = ("this call, which may end sessions," if guarded
               else "this call against the project's hooks")
        reason = unchecked_reason(why)
        if event == "PreToolUse":
            out = {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "ask",
                                          "permissionDecisionReason": reason}}
            if first:
                out["systemMessage"] = INSTALL
        elif event == "PreSkillShellCommand":
            reason = reason.replace("Claude Code's permission prompt decides",
                                    "a skill's shell command cannot wait for a permission "
                                    "prompt, so it was not run")
            out = {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                          "permissionDecisionReason": reason}}
            if first:
                out["systemMessage"] = INSTALL
        else:
            out = {"systemMessage": reason}
        print(json.dumps(out, separators=(",", ":"), ensure_ascii=False))
    elif first:
        print(json.dumps({"systemMessage": INSTALL}, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

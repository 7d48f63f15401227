"""What counts as a secret, and how text is scrubbed of secrets before it leaves the process.

A secret is a value: the API key, the value of an option or environment variable named
like a secret, or an option the user declared secret. Every one is replaced by
``[redacted]`` wherever it appears in text the harness writes or prints. Values shorter
than ``MIN_SECRET_LENGTH`` are not scrubbed from text (replacing '12' everywhere would
garble it), though a secret option's value is never recorded whatever its length.

What an agent's processes print is relayed to the harness's stderr through the same
scrubbing, with its control characters shown as escapes (``relay_to_stderr``), and text
it gives that UTF-8 cannot hold is kept with U+FFFD in its place
(``replace_lone_surrogates``).

A leaf module: the run, the agents that keep logs, and the writers of files all use it.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

SECRET_WORDS = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "auth",
    "authorization",
    "bearer",
    "credential",
    "cookie",
    "session",
)
"""A name is a secret's when one of its words is one of these, ends with one (apikey,
hftoken, oauth) or is its plural (hf_tokens, credentials)."""
ENVIRONMENT_SECRET_WORDS = tuple(w for w in SECRET_WORDS if w not in {"cookie", "session"})
"""For environment variables: session and cookie name ordinary desktop settings
(XDG_SESSION_CLASS=user, DESKTOP_SESSION=ubuntu), whose values are words, not secrets."""
QUANTITY_WORDS = ("max", "min", "num", "count", "limit", "budget", "length", "len", "size", "per",
                  "reply", "prompt", "completion", "context", "ctx", "total")  # fmt: skip
"""Words of counts and limits: max_tokens, reply_tokens or token_limit name a number,
not a secret."""
SETTING_WORDS = ("mode", "type", "method", "scheme", "kind", "url", "uri", "host", "port",
                 "file", "path", "dir", "enabled", "required", "name")  # fmt: skip
"""Words of settings about a secret, not the secret: RAY_AUTH_MODE=token or
API_KEY_FILE=/run/key name a mode and a path (scrubbing the word "token" from every
text would garble the results)."""
SECRET_OPTIONS_KEY = "secret_options"
"""The option that lists, for the agent, the names of the options given as secret."""
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4
"""Shorter values are not scrubbed from text: replacing '12' everywhere would garble it."""


def _named_like(name: str, words: tuple[str, ...]) -> bool:
    parts = [part for part in re.split(r"[^a-z0-9]+", name.lower()) if part]
    if any(part in QUANTITY_WORDS or part in SETTING_WORDS for part in parts):
        return False
    for part in parts:
        if part.startswith(("max", "min", "num")):  # maxtokens; MINIO_SECRET_KEY is a secret
            continue
        singular = part.removesuffix("s")
        if any(form.endswith(word) for form in (part, singular) for word in words):
            return True
    return False


def is_secret_name(name: str) -> bool:
    """True for option names like api_key, auth-token, hftoken, hf_tokens, credentials,
    client.secret, db_password, authorization, bearer, cookie or session; False for
    counts and limits such as max_tokens."""
    return _named_like(name, SECRET_WORDS)


def is_secret_env_name(name: str) -> bool:
    """True for environment variables like OPENAI_API_KEY, MY_CLOUD_SECRET, HF_TOKEN or
    DB_PASSWORD (session and cookie aside: see ENVIRONMENT_SECRET_WORDS)."""
    return _named_like(name, ENVIRONMENT_SECRET_WORDS)


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """The values of the environment variables named like secrets."""
    return [value for name, value in environ.items() if value and is_secret_env_name(name)]


def secret_option_names(options: Mapping[str, Any]) -> set[str]:
    """The options whose values are secrets: api_key, those named like a secret, and those
    the user gave as secret (listed under ``SECRET_OPTIONS_KEY``)."""
    declared = options.get(SECRET_OPTIONS_KEY)
    names = {str(n) for n in declared} if isinstance(declared, list | tuple) else set()
    names |= {key for key in options if key == "api_key" or is_secret_name(key)}
    names.discard(SECRET_OPTIONS_KEY)
    return names


def option_secrets(options: Mapping[str, Any]) -> list[str]:
    """The secret values among ``options`` (only strings: a list of names is not one)."""
    return [v for k in secret_option_names(options) if isinstance(v := options.get(k), str)]


class Redactor:
    """Replaces each known secret value in text before the text leaves the process."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        values = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH},
                        key=len, reverse=True)  # fmt: skip
        self._values = tuple(values)
        self._encoded = tuple(v.encode("utf-8") for v in values)
        self.longest = len(self._encoded[0]) if values else 0
        """The longest secret's length in UTF-8 bytes: what a stream must hold back."""
        self._text = re.compile("|".join(map(re.escape, values))) if values else None
        self._bytes = (
            re.compile(b"|".join(re.escape(v.encode("utf-8")) for v in values)) if values else None
        )

    def __bool__(self) -> bool:
        """False when there is nothing to redact."""
        return self._text is not None

    def __call__(self, text: str) -> str:
        # A substring search per secret is many times faster than the pattern, and most
        # text holds no secret at all.
        if self._text is None or not any(v in text for v in self._values):
            return text
        return self._text.sub(REDACTED, text)

    def data(self, data: bytes) -> bytes:
        """``data`` with every secret's UTF-8 bytes replaced."""
        if self._bytes is None or not any(v in data for v in self._encoded):
            return data
        return self._bytes.sub(REDACTED.encode(), data)

    def stream(self, write: Callable[[bytes], Any]) -> RedactingStream:
        """A writer that redacts what passes through it on its way to ``write``."""
        return RedactingStream(self, write)

    @classmethod
    def for_run(
        cls,
        api_key: str | None,
        options: Mapping[str, Any],
        environ: Mapping[str, str] | None = None,
    ) -> Redactor:
        """The redactor for a run: its API key, its secret options' values and the values
        of the variables named like secrets in ``environ`` (default: this process's)."""
        env = os.environ if environ is None else environ
        return cls([api_key, *option_secrets(options), *environment_secrets(env)])


class RedactingStream:
    """Redacts a byte stream that arrives in pieces: a secret split across two pieces is
    still caught, because the last ``longest - 1`` bytes wait for the next piece."""

    def __init__(self, redactor: Redactor, write: Callable[[bytes], Any]) -> None:
        self._redactor, self._write = redactor, write
        self._pattern = redactor._bytes
        self._held = b""

    def write(self, data: bytes) -> None:
        if self._pattern is None:
            self._write(data)
            return
        buffer = self._held + data
        cut = max(0, len(buffer) - (self._redactor.longest - 1))
        out, start = [], 0
        found_any = any(v in buffer for v in self._redactor._encoded)
        for found in self._pattern.finditer(buffer) if found_any else ():
            if found.start() >= cut:
                break
            out += [buffer[start : found.start()], REDACTED.encode()]
            start = found.end()
        end = max(cut, start)
        out.append(buffer[start:end])
        self._held = buffer[end:]
        if any(out):
            self._write(b"".join(out))

    def close(self) -> None:
        """Write what was held back (the stream ended)."""
        if self._held:
            self._write(self._redactor.data(self._held))
            self._held = b""


_CONTROLS = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")
"""Control characters but tab, newline and carriage return, and the C1 controls as UTF-8."""


class ShownStream:
    """Shows the control characters of a byte stream as escapes (ESC as ``\\x1b``) on
    its way to ``stream``: what an agent prints on the harness's stderr can neither move
    the cursor, clear the screen nor hide the lines that follow, such as the verdicts."""

    def __init__(self, stream: RedactingStream) -> None:
        self._stream = stream
        self._held = b""

    def write(self, data: bytes) -> None:
        data = self._held + data
        # The first byte of a C1 control as UTF-8 waits for its second, in the next piece.
        self._held = data[-1:] if data.endswith(b"\xc2") else b""
        self._stream.write(_CONTROLS.sub(_escaped, data[: len(data) - len(self._held)]))

    def close(self) -> None:
        self._stream.write(self._held)
        self._stream.close()


def _escaped(control: re.Match[bytes]) -> bytes:
    return b"\\x%02x" % control[0][-1]


def copy_redacted(pipe: IO[bytes], stream: RedactingStream | ShownStream) -> None:
    """Copy what a process writes to ``pipe`` through ``stream`` until the pipe closes
    (run on a thread of its own). When the sink fails (a closed log, a reader of stderr
    gone), the pipe is still drained, so the writer never blocks on it."""
    sink_ok = True
    try:
        while chunk := os.read(pipe.fileno(), 1 << 16):
            if sink_ok:
                try:
                    stream.write(chunk)
                except (OSError, ValueError):
                    sink_ok = False
    except (OSError, ValueError):  # the pipe itself was closed: nothing more comes
        pass
    finally:
        if sink_ok:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        pipe.close()


def relay_to_stderr(pipe: IO[bytes], redact: Redactor, name: str) -> threading.Thread:
    """Start a thread that copies what an agent's process prints to ``pipe`` onto this
    process's stderr, redacted and with its control characters shown."""
    sink = ShownStream(redact.stream(write_all(2)))
    thread = threading.Thread(target=copy_redacted, args=(pipe, sink), name=name, daemon=True)
    thread.start()
    return thread


def write_all(fd: int) -> Callable[[bytes], None]:
    """A writer of whole byte strings to ``fd`` (os.write may write only part)."""

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    return write


def public_options(options: Mapping[str, Any], secret: Iterable[str] = ()) -> dict[str, Any]:
    """Options as they may be recorded: the values of secret-named options and of the
    ``secret`` ones (--secret-option) replaced, however short."""
    hidden = secret_option_names(options) | set(secret)
    return {k: REDACTED if k in hidden else v for k, v in options.items()}


def with_secret_options(options: Mapping[str, str], secret: Mapping[str, str]) -> dict[str, Any]:
    """The options an agent is given: ``options``, then the ``secret`` ones (--secret-option),
    whose names are listed under SECRET_OPTIONS_KEY so that the agent, and its logs, know."""
    if not secret:
        return dict(options)
    return {**options, **secret, SECRET_OPTIONS_KEY: sorted(secret)}


def run_redactor(
    api_key: str | None, options: Mapping[str, str], secret: Mapping[str, str]
) -> Redactor:
    """The redactor of a run: its API key, its secret options (by name or given as
    secret), and the environment's variables named like secrets."""
    return Redactor.for_run(api_key, with_secret_options(options, secret))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone UTF-16 surrogate in its strings (dict keys included, at any
    depth of its dicts, lists and tuples) shown as U+FFFD, as report/xml_text.py shows
    what XML cannot hold. An agent's text may hold one ("\\ud800" in JSON, a str built
    from code points), and UTF-8 cannot: one in a reply or a request would crash the
    writing of the trajectory, the journal, the recording and the results. A string
    without one is returned as is."""
    # map, not comprehensions: one frame per level of nesting, so that whatever the
    # worker could pickle is walked here too
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        replace = replace_lone_surrogates
        return dict(zip(map(replace, value.keys()), map(replace, value.values()), strict=True))
    if isinstance(value, list | tuple):
        return type(value)(map(replace_lone_surrogates, value))
    return value

"""Commands that serve models: the embedded local model and the scripted test server."""

from __future__ import annotations

from pathlib import Path

import click

from agent_eval.cli.common import EXIT_OK, optional_path


@click.command("serve-model")
@click.option("--port", default=4000, show_default=True, type=int, help="Port; 0 picks a free one.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; a non-loopback one needs --allow-remote.",
)
@click.option(
    "--model-path",
    type=click.Path(exists=True, dir_okay=False),
    help="Serve this GGUF file instead of the shipped Gemma 3 270M Q4_K_M.",
)
@click.option(
    "--parallel",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Model instances, that is requests answered at once.",
)
@click.option(
    "--n-ctx",
    default=8192,
    show_default=True,
    type=click.IntRange(min=256),
    help="Context window per instance, in tokens.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    help="llama.cpp threads per instance [default: half the cores / --parallel].",
)
@click.option(
    "--max-tokens-cap",
    default=4096,
    show_default=True,
    type=click.IntRange(min=1),
    help="The most tokens one reply generates, whatever a request asks (and never more "
    "than --n-ctx).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host and requests under any Host name (no auth).",
)
def serve_model(
    port: int,
    host: str,
    model_path: str | None,
    parallel: int,
    n_ctx: int,
    threads: int | None,
    max_tokens_cap: int,
    allow_remote: bool,
) -> int:
    """Serve a GGUF model over an OpenAI-compatible API until Ctrl-C.

    It answers the models local/chat, local/answer and local/router, and reports the
    model file, quantisation and engine version at /health.
    """
    import os

    from agent_eval.models import LocalModelServer

    xdg = os.environ.get("XDG_CACHE_HOME")
    server = LocalModelServer(
        model_path=optional_path(model_path),
        host=host,
        port=port,
        parallel=parallel,
        n_ctx=n_ctx,
        n_threads=threads,
        max_tokens_cap=max_tokens_cap,
        allow_remote=allow_remote,
        cache_dir=Path(xdg) / "agent-eval" / "models" if xdg else None,
    )
    server.open()
    info = server.health()
    click.echo(
        f"serving {info['model_file']} ({info['quant']}, {info['engine']} via "
        f"{info['engine_binding']} {info['engine_version']}) at {server.base_url}"
    )
    click.echo(f"models: {', '.join(c['id'] for c in server.model_cards())}; Ctrl-C stops")
    server.serve_forever()  # returns on Ctrl-C, once running requests have finished
    click.echo("stopped", err=True)
    return EXIT_OK


@click.command("mock-model")
@click.option("--script", "script_path", required=True, help="The JSON script of replies.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; a non-loopback one needs --allow-remote.",
)
@click.option(
    "--port",
    default=4001,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0 picks a free one).",
)
@click.option(
    "--latency",
    default=0.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds added to every reply.",
)
@click.option(
    "--fault-rate",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Share of requests that fail with an injected fault.",
)
@click.option(
    "--faults",
    default="429,500,503,timeout,malformed",
    show_default=True,
    help="Comma-separated fault kinds drawn at --fault-rate (also no_choices).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the fault draws.")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host and requests under any Host name (no auth).",
)
def mock_model(
    script_path: str,
    host: str,
    port: int,
    latency: float,
    fault_rate: float,
    faults: str,
    seed: int,
    allow_remote: bool,
) -> int:
    """Serve scripted chat-completion replies until Ctrl-C, for hermetic agent tests.

    The server answers /v1/models and /v1/chat/completions from the script's rules and
    ordered replies, in native tool-call or JSON-action mode (see examples/mock-replies.json).
    """
    from agent_eval.models import serve

    kinds = tuple(k.strip() for k in faults.split(",") if k.strip())
    # A busy port or a non-loopback --host without --allow-remote: ConfigError.
    serve(script_path, host, port, latency, fault_rate, kinds, seed, allow_remote)
    return EXIT_OK

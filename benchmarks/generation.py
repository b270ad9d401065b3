"""Generation speed (docs/generation.md): tokens per second of `program.generate`
on examples/training/char_transformer_ids.fuse, with the prefix's rows reused and
without (the whole window per token), against the same model hand-written in
PyTorch with a KV cache (and without one: the context run whole per token), the
same params read from one checkpoint.  Greedy, so that every side must give the
same tokens (checked).  The text stays inside the window (64 positions), where
rows can be reused: past it the context slides and every position changes.
Each side runs `--rounds` times, alternating; the best round counts (a loaded
machine only ever slows a round).  One thread each (`--threads`).  `--clock cpu`
times each side's process CPU time instead of the wall clock (steadier when
other work shares the machine; one thread each, so the two agree when quiet).

    python benchmarks/generation.py [--small | --large] [--rounds R] [--backends numpy,torch]
    python benchmarks/generation.py --params CKPT.safetensors   # a trained checkpoint
    python benchmarks/generation.py --clock cpu                 # steadier when loaded
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "training"))
from make_chars import corpus, sized_ids_program, vocabulary  # noqa: E402

import fuse_lang  # noqa: E402

EXAMPLE = ROOT / "examples" / "training" / "char_transformer_ids.fuse"
REAL = {"window": 64, "width": 64, "heads": 4, "key": 16, "mlp": 256}
SMALL = {"window": 16, "width": 16, "heads": 2, "key": 8, "mlp": 32}
LARGE = {"window": 256, "width": 128, "heads": 4, "key": 32, "mlp": 512}
PROMPT = "The "
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
now = time.perf_counter  # main() sets it from --clock


def random_checkpoint(folder: Path, text: str, vocab: list[str], window: int) -> Path:
    """The params training starts from (seed 0), scaled up so that the logits differ
    clearly (greedy ties would make the comparison fragile), saved as a checkpoint
    with the vocabulary."""
    from fuse_lang.check.param_roles import param_starts
    from fuse_lang.run.param_init import initial_param
    from fuse_lang.run.train.checkpoints import save_checkpoint

    np.save(folder / "chars_train_ids.npy", np.zeros((2, window + 1), dtype=np.int64))
    analysis = fuse_lang.analyze(text, str(folder / "lm.fuse"), folder)
    starts = param_starts(analysis)
    params = {n: (initial_param(n, t.shape, 0, starts.get(n)) * 2.0).astype(np.float32)
              for n, t in analysis.tensors.items() if t.kind == "param"}
    import json

    path = folder / "lm.safetensors"
    save_checkpoint(path, params, {}, {"fuse.vocabulary": json.dumps(vocab)})
    return path


def torch_generate(params: dict, prompt: list[int], steps: int, sizes: dict,
                   cache: bool) -> tuple[list[int], float]:
    """The model hand-written in PyTorch: greedy tokens and seconds.  With `cache`,
    each block keeps its keys and values and a step computes the new position
    only; without, each step runs the whole context."""
    import torch
    import torch.nn.functional as F

    w = {n: torch.from_numpy(np.asarray(v, dtype=np.float32)) for n, v in params.items()}
    scale = math.sqrt(sizes["key"])

    def norm(v):
        return F.layer_norm(v, v.shape[-1:], eps=1e-5)

    def block(h, i, kept, start):
        a = norm(h)  # [t, d]: positions start .. start + t - 1
        q = torch.einsum("hkd,td->htk", w[f"WQ{i}"], a)
        k = torch.einsum("hkd,td->htk", w[f"WK{i}"], a)
        v = torch.einsum("hkd,td->htk", w[f"WV{i}"], a)
        if kept is not None:
            if i in kept:
                k = torch.cat([kept[i][0], k], dim=1)
                v = torch.cat([kept[i][1], v], dim=1)
            kept[i] = (k, v)
        s = q @ k.transpose(-1, -2) / scale  # [h, t, T]
        rows = torch.arange(start, start + h.shape[0])[:, None]
        s = torch.where(torch.arange(k.shape[1])[None, :] <= rows, s, torch.tensor(-1e9))
        h = h + torch.einsum("dhk,htk->td", w[f"WO{i}"], torch.softmax(s, dim=-1) @ v)
        f = F.gelu(norm(h) @ w[f"U{i}"].T + w[f"BU{i}"])
        return h + f @ w[f"D{i}"].T

    def forward(ids, start, kept):
        h = w["Emb"][ids] + w["Pos"][start:start + len(ids)]
        h = block(block(h, 1, kept, start), 2, kept, start)
        return (norm(h[-1]) @ w["Out"].T + w["BOut"]).argmax().item()

    text = list(prompt)
    started = now()
    with torch.inference_mode():
        kept: dict | None = {} if cache else None
        token = forward(torch.tensor(text), 0, kept)
        for _ in range(steps - 1):
            text.append(token)
            if cache:
                token = forward(torch.tensor([token]), len(text) - 1, kept)
            else:
                token = forward(torch.tensor(text), 0, None)
        text.append(token)
    return text[len(prompt):], now() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="tiny sizes (a smoke test)")
    parser.add_argument("--large", action="store_true",
                        help="a window of 256 and width 128 (where the arithmetic counts)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backends", default="numpy,torch")
    parser.add_argument("--params", help="a checkpoint of the example (default: its start)")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall")
    args = parser.parse_args()
    global now
    now = CLOCK[args.clock]
    import torch

    torch.set_num_threads(args.threads)
    sizes = SMALL if args.small else LARGE if args.large else REAL
    vocab = vocabulary(corpus(300_000))
    text = sized_ids_program(EXAMPLE.read_text(encoding="utf-8"), len(vocab), **sizes)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "lm.fuse").write_text(text, encoding="utf-8")
        checkpoint = Path(args.params) if args.params else \
            random_checkpoint(folder, text, vocab, sizes["window"])
        from fuse_lang.run.train.checkpoints import load_checkpoint

        params = load_checkpoint(checkpoint).params
        prompt = [vocab.index(c) for c in PROMPT]
        steps = sizes["window"] - len(prompt)  # every step inside the window
        print(f"generation: {steps} tokens after {PROMPT!r} (window {sizes['window']}, width "
              f"{sizes['width']}), greedy, {args.threads} thread(s), best of {args.rounds}, {args.clock} clock")
        rates: dict[str, float] = {}
        expected = None
        for _ in range(args.rounds):
            for cache in (True, False):
                tokens, seconds = torch_generate(params, prompt, steps, sizes, cache)
                expected = expected or tokens
                assert tokens == expected, "PyTorch with and without a cache differ"
                key = f"pytorch {'KV cache' if cache else 'no cache'}"
                rates[key] = max(rates.get(key, 0.0), steps / seconds)
            for backend in args.backends.split(","):
                program = fuse_lang.load(folder / "lm.fuse", backend=backend, weights=checkpoint)
                for reuse in (True, False):
                    started = now()
                    result = program.generate(prompt, steps, temperature=0, reuse=reuse)
                    seconds = now() - started
                    assert result.generated == expected, (backend, reuse, result.generated,
                                                          expected)
                    assert (result.reused_steps == steps - 1) == reuse, result.reuse_note
                    key = f"fuse {backend} {'reuse' if reuse else 'whole window'}"
                    rates[key] = max(rates.get(key, 0.0), steps / seconds)
        for key, rate in rates.items():
            print(f"  {key:<28} {rate:9.1f} tokens/s")
        for backend in args.backends.split(","):
            kept, whole = rates[f"fuse {backend} reuse"], rates[f"fuse {backend} whole window"]
            print(f"generation, {backend}: reuse / whole window {kept / whole:.2f}x; "
                  f"fuse reuse / pytorch KV cache {kept / rates['pytorch KV cache']:.3f}; "
                  f"fuse whole window / pytorch no cache "
                  f"{whole / rates['pytorch no cache']:.3f}")
        print("the same tokens on every side: yes")


if __name__ == "__main__":
    main()

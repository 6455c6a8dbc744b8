"""Training throughput of the project's model per encoding, against a plain torch reference.

Issue 4 (Speed): the reference is a pre-norm ``torch.nn.TransformerEncoderLayer`` stack with a
causal mask and a learned position table, the same size as ours (width, heads, layers, MLP
ratio, tied output head). Both train side by side in one process, interleaved repeat by repeat
so drift in machine load hits both alike; we report medians over repeats. Targets: ratio
(ours / reference tokens per second) >= 1.0 for none, learned, sinusoidal and >= 0.85 for rope,
alibi, t5_bias.

On a GPU the fair reference is ``--reference sdpa``: nanoGPT's model, the same size, whose
attention is one ``F.scaled_dot_product_attention(is_causal=True)`` call (the fused flash or
memory-efficient kernel, no mask tensor). ``--bf16`` trains both under bfloat16 autocast, as
``extrapolation.training.bf16`` does (here on the CPU too, so that the path can be tested
there). On CUDA each model's peak allocated memory is recorded beside its speed.

    .venv/bin/python benchmarks/throughput.py                # the default CPU scale
    .venv/bin/python benchmarks/throughput.py --device cuda --bf16 --reference sdpa \\
        --vocab 222 --d-model 256 --heads 8 --layers 6 --seq-len 512 --batch 16
                                                              # config/gpu.yaml's LM

Writes a JSON file (``--out``) and prints a Markdown table. A script, not a timed test.
"""

import argparse
import json
import platform
import statistics
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from posenc.device import device_name, resolve_device
from posenc.encodings import ENCODINGS
from posenc.io import write_json
from posenc.train import build_model

TARGETS = {
    "none": 1.0,
    "learned": 1.0,
    "sinusoidal": 1.0,
    "rope": 0.85,
    "alibi": 0.85,
    "t5_bias": 0.85,
}
# Every other encoding, the registry's newer ones and plugins alike (issue 13: >= 0.85).
DEFAULT_TARGET = 0.85


class ReferenceLM(nn.Module):
    """Token + learned position embeddings -> pre-norm TransformerEncoder (causal) -> LN ->
    tied head: the textbook PyTorch model at the same size as ours."""

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int, max_len: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model,
            n_heads,
            dim_feedforward=4 * d_model,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        L = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(L, device=tokens.device))  # (B, L, D)
        mask = nn.Transformer.generate_square_subsequent_mask(L, device=tokens.device)
        x = self.blocks(x, mask=mask, is_causal=True)
        return self.ln_f(x) @ self.embed.weight.T  # (B, L, V)


class SdpaBlock(nn.Module):
    """A pre-norm GPT block written with ``F.scaled_dot_product_attention`` (nanoGPT's)."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, D = x.shape
        H = self.n_heads
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, H, D // H).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, L, Dh)
        x = x + self.out(y.transpose(1, 2).reshape(B, L, D))
        return x + self.mlp(self.ln2(x))


class SdpaReferenceLM(nn.Module):
    """Token + learned position embeddings -> pre-norm SDPA blocks (causal) -> LN -> tied head:
    the plain model a GPU runs fastest, at the same size as ours."""

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int, max_len: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(SdpaBlock(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        L = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(L, device=tokens.device))  # (B, L, D)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.embed.weight.T  # (B, L, V)


# --reference: the plain torch model each encoding's speed is divided by.
REFERENCES = {
    "torch": (ReferenceLM, "torch.nn.TransformerEncoderLayer"),
    "sdpa": (SdpaReferenceLM, "F.scaled_dot_product_attention (nanoGPT-style)"),
}


def steps_per_second(
    model, batches, steps: int, device: torch.device, autocast=nullcontext
) -> float:
    """Training steps per second (forward, backward, AdamW) over ``steps`` steps; the forward
    and the loss under ``autocast()`` (bfloat16 with --bf16)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()

    def step(x, y):
        with autocast():
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    step(*batches[0])  # warm-up: allocations, kernel selection
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for i in range(steps):
        step(*batches[i % len(batches)])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return steps / (time.perf_counter() - start)


def measure(args) -> dict:
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    vocab, B, L = args.vocab, args.batch, args.seq_len
    data = torch.randint(0, vocab, (8, B, L + 1)).to(device)
    batches = [(d[:, :-1], d[:, 1:]) for d in data]
    model_cfg = {"d_model": args.d_model, "n_heads": args.heads, "n_layers": args.layers}
    reference_class, reference_name = REFERENCES[args.reference]
    reference = reference_class(vocab, args.d_model, args.heads, args.layers, L).to(device)
    t5_at_length = {"t5_bias": {"max_distance": L}}
    ours = {
        enc: build_model(vocab, model_cfg, enc, t5_at_length, max_len=L).to(device)
        for enc in args.encodings
    }
    if args.bf16:

        def autocast():
            return torch.autocast(device.type, dtype=torch.bfloat16)
    else:
        autocast = nullcontext
    cuda = device.type == "cuda"
    samples = {enc: [] for enc in args.encodings} | {"reference": []}
    peaks = dict.fromkeys(samples, 0.0)  # MiB: the CUDA allocator's peak, largest of repeats

    def timed(name, model):
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        samples[name].append(steps_per_second(model, batches, args.steps, device, autocast))
        if cuda:
            peaks[name] = max(peaks[name], torch.cuda.max_memory_allocated(device) / 2**20)

    for _ in range(args.repeats):
        for enc in args.encodings:  # interleaved: each repeat times every model once
            timed(enc, ours[enc])
            timed("reference", reference)
    tokens = B * L
    ref = statistics.median(samples["reference"]) * tokens
    rows = []
    for enc in args.encodings:
        tps = statistics.median(samples[enc]) * tokens
        rows.append(
            {
                "encoding": enc,
                "tokens_per_s": tps,
                "reference_tokens_per_s": ref,
                "ratio": tps / ref,
                "target": TARGETS.get(enc, DEFAULT_TARGET),
                "meets_target": tps / ref >= TARGETS.get(enc, DEFAULT_TARGET),
                "params": sum(p.numel() for p in ours[enc].parameters()),
            }
            | (
                {"peak_memory_mb": peaks[enc], "reference_peak_memory_mb": peaks["reference"]}
                if cuda
                else {}
            )
        )
    return {
        "benchmark": f"training throughput, ours vs {reference_name} reference",
        "machine": {
            "device": device_name(device),
            "platform": platform.platform(),
            "torch": torch.__version__,
            "threads": args.threads,
        },
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "reference_params": sum(p.numel() for p in reference.parameters()),
        "samples_steps_per_s": samples,
        "rows": rows,
    }


def markdown(result: dict) -> str:
    """The table; on CUDA with each model's peak GPU memory (ours / reference) after it."""
    memory = any("peak_memory_mb" in r for r in result["rows"])
    lines = [
        "| encoding | ours (tokens/s) | reference (tokens/s) | ratio | target |"
        + (" peak GPU memory (MiB) |" if memory else ""),
        "|---|---:|---:|---:|---:|" + ("---:|" if memory else ""),
    ]
    for r in result["rows"]:
        mark = "" if r["meets_target"] else " (below)"
        lines.append(
            f"| {r['encoding']} | {r['tokens_per_s']:,.0f} | "
            f"{r['reference_tokens_per_s']:,.0f} | {r['ratio']:.2f}{mark} | "
            f"≥ {r['target']} |"
            + (
                f" {r['peak_memory_mb']:,.0f} / {r['reference_peak_memory_mb']:,.0f} |"
                if memory
                else ""
            )
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1, help="as one workflow job uses")
    parser.add_argument("--encodings", nargs="+", default=list(ENCODINGS))
    parser.add_argument("--vocab", type=int, default=103)  # pydoc_data.topics' characters
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--bf16", action="store_true", help="bfloat16 autocast for ours and the reference"
    )
    parser.add_argument(
        "--reference",
        choices=sorted(REFERENCES),
        default="torch",
        help="torch: TransformerEncoderLayer; sdpa: F.scaled_dot_product_attention blocks",
    )
    parser.add_argument("--out", default="results/benchmarks/throughput.json")
    args = parser.parse_args()
    result = measure(args)
    write_json(Path(args.out), result)
    print(json.dumps(result["machine"]))
    print(markdown(result))


if __name__ == "__main__":
    main()

"""What the aliasing analysis measures: each configured encoding whose positions become a table
of angles (it declares ``waves``), computed in each variant's dtypes, and the learned input
tables, asked past their end; every other encoding is n/a here, with the reason."""

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from posenc.device import dtype_from_name
from posenc.encodings import (
    REGISTRY,
    PositionalEncoding,
    PositionOutOfRange,
    base_of,
    build,
    head_groups,
    override,
)
from posenc.numerics import RowsFn


@dataclass(frozen=True)
class Variant:
    """How a table is computed: angles (and positions) in ``angles``, stored in ``store``."""

    angles: str
    store: str

    @property
    def naive(self) -> bool:
        return self.angles == self.store

    @property
    def name(self) -> str:
        return f"naive {self.store}" if self.naive else f"{self.store} from {self.angles} angles"


@dataclass(frozen=True)
class AngleTable:
    """One encoding's table of angles: its module, whose :meth:`angle_table` gives the rows and
    :meth:`frequencies` the ω_i."""

    encoding: str
    module: PositionalEncoding
    group: tuple[int, ...] = ()  # the group of heads it is, where an encoding's heads differ

    @property
    def omega(self) -> Tensor:
        return self.module.frequencies(*self.group)  # (pairs,) float64

    @property
    def width(self) -> int:
        return 2 * self.omega.numel()

    @property
    def base(self) -> float | None:
        """b of ω_i = b^(-2i/d), read back from the first two frequencies (ω_0 / ω_1 = b^(2/d));
        None with a single pair. To 12 digits: the round trip costs a few ulps."""
        return base_of(self.omega)

    def angles(self, positions: Tensor, dtype: torch.dtype) -> Tensor:
        """θ[p, i] = p·ω_i in ``dtype``, as :func:`posenc.encodings.angles` computes them: ω in
        float64, positions and ω cast, one product. Shape (L, pairs)."""
        omega = self.omega.to(device=positions.device, dtype=dtype)
        return positions.to(dtype)[:, None] * omega[None, :]

    def rows_fn(self, variant: Variant) -> RowsFn:
        """Rows for integer positions, through the registry's formula in ``variant``'s dtypes
        (sinusoidal: PE(p) = (sin pω_0, cos pω_0, ...), Vaswani et al. 2017; a rotation: its
        cos/sin table (cos pθ_0, ..., sin pθ_0, ...), Su et al. 2021)."""
        a, s = dtype_from_name(variant.angles), dtype_from_name(variant.store)
        return lambda idx: self.module.angle_table(idx, a, *self.group).to(s)

    def exact_fn(self) -> RowsFn:
        return self.rows_fn(Variant("float64", "float64"))


def angle_tables(cfg: dict, encodings: list[str], encoding_cfg: dict) -> dict[str, AngleTable]:
    """Every configured encoding whose positions become a table of angles (``waves``), in
    config order, built with the encoding settings and this section's own.

    An input table is d_model wide; one that acts on queries and keys is one head of
    rope_head_dim (its table is per head), at the base ``bases`` names for it (Llama 3's, say,
    beside the sinusoidal table's) or its own. An encoding whose heads differ is built with
    ``n_heads`` heads and gives a table per group of heads, named ``encoding+heads …``.
    """
    tables = {}
    for name in encodings:
        spec = REGISTRY[name]
        if not spec.waves:
            continue
        config, width = encoding_cfg, cfg["d_model"]
        if spec.acts_on == "qk":
            if name in cfg["bases"]:
                config = override(encoding_cfg, name, base=cfg["bases"][name])
            width = cfg["rope_head_dim"]
            heads = cfg["n_heads"]
            wide = build(name, config, d_model=width * heads, n_heads=heads)
            groups = head_groups(wide)
            tables |= {label: AngleTable(label, wide, (g,)) for g, label in groups.items()}
            if groups:
                continue
        module = build(name, config, d_model=width, max_len=cfg["learned_max_len"])
        tables[name] = AngleTable(name, module)
    return tables


def not_measured(encodings: list[str]) -> dict[str, str]:
    """Why each configured encoding that is neither a table of angles nor a learned input table
    has nothing to measure here."""
    return {
        name: "no learned table, and no waves: its positions become no table of angles"
        for name in encodings
        if not REGISTRY[name].waves
        and not (REGISTRY[name].learned and REGISTRY[name].acts_on == "input")
    }


def out_of_range(module: PositionalEncoding, max_len: int) -> dict[str, Any]:
    """Ask a learned input table for positions 0..L_max-1 (fine) and then L_max."""
    inside = list(module.input_encoding(torch.arange(max_len)).shape)
    found = {"max_len": max_len, "in_range_shape": inside, "raised": False, "error": None}
    try:
        module.input_encoding(torch.arange(max_len + 1))
    except PositionOutOfRange as err:
        return {**found, "raised": True, "error": type(err).__name__, "message": str(err)}
    return {**found, "message": None}


def learned_tables(cfg: dict, encodings: list[str], encoding_cfg: dict) -> list[dict[str, Any]]:
    """Every configured learned input table, L_max = learned_max_len rows, asked past its end."""
    out = []
    for name in encodings:
        if REGISTRY[name].learned and REGISTRY[name].acts_on == "input":
            module = build(
                name, encoding_cfg, d_model=cfg["d_model"], max_len=cfg["learned_max_len"]
            )
            out.append({"encoding": name, **out_of_range(module, cfg["learned_max_len"])})
    return out


def spectra(tables: dict[str, AngleTable]) -> list[dict[str, Any]]:
    """Each table's frequencies over every pair of the vector it encodes (the head, or
    d_model): ω_i of its waves, 0 for a pair that never turns (a still pair, or one outside the
    rotated width). Two ways to turn a share of a head differ
    here: a spectrum over the rotated width alone, or the head's own fastest pairs kept."""
    rows = []
    for e, tab in tables.items():
        omega = tab.omega.tolist()
        pairs = max(tab.module.params.head_dim // 2, len(omega))
        rows.append(
            {
                "encoding": e,
                "pairs": pairs,
                "omega": omega + [0.0] * (pairs - len(omega)),
            }
        )
    return rows

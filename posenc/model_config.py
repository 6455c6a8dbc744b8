"""What a model is built from, torch-free (the specs read it at parse time): the model's config
and the initialisation its options choose between. :mod:`posenc.model` builds from it."""

from dataclasses import dataclass

# Token embeddings' standard deviation when they are not scaled (``scale_embeddings`` off):
# GPT-2's (Radford et al. 2019). The extrapolation section's prose quotes it.
UNSCALED_EMBEDDING_STD = 0.02


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    causal: bool = True
    dropout: float = 0.0
    mlp_ratio: int = 4
    # Multiply token embeddings by sqrt(d_model) (Vaswani et al. 2017 §3.4; fairseq's default,
    # which Press et al. 2022 trained with). Without it, token embeddings at
    # UNSCALED_EMBEDDING_STD are drowned by a unit-amplitude sinusoidal table added to them.
    scale_embeddings: bool = False

"""The models the guard benchmarks compile: built from configs with random
weights (nothing is downloaded), each with its inputs and grad mode."""

from __future__ import annotations

import os

# No downloads: models are built from configs with random weights.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import dataclasses
from typing import Any, Callable, ContextManager

import torch
from torch import nn

from guard_bench.torchvision_shim import ModelUnavailable, import_or_unavailable

Inputs = dict[str, Any]
SEED = 0


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[], nn.Module]
    make_inputs: Callable[[nn.Module], Inputs]
    train: bool = False  # train mode + grad enabled, else eval + no_grad
    # Restores state a call changes, so that every call does the same work
    # (run before each call, outside any guard check).
    rewind: Callable[[Inputs], None] | None = None

    def call(self, model: Callable[..., Any], inputs: Inputs) -> Any:
        if self.rewind is not None:
            self.rewind(inputs)
        return model(**inputs)


def _transformers_model(model_class: str, config_class: str, **config: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        transformers = import_or_unavailable("transformers")
        cfg = getattr(transformers, config_class)(**config)
        return getattr(transformers, model_class)(cfg)

    return build


def _timm_model(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        timm = import_or_unavailable("timm")
        return timm.create_model(name, pretrained=False, **kwargs)

    return build


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


def token_inputs(model: nn.Module, seq_len: int = 16) -> Inputs:
    vocab_size = model.config.vocab_size  # type: ignore[union-attr]
    return {"input_ids": torch.randint(0, vocab_size, (1, seq_len), generator=_generator())}


def encoder_decoder_inputs(model: nn.Module, seq_len: int = 16) -> Inputs:
    inputs = token_inputs(model, seq_len)
    inputs["decoder_input_ids"] = inputs["input_ids"].clone()
    return inputs


def hf_image_inputs(model: nn.Module) -> Inputs:
    cfg = model.config  # type: ignore[union-attr]
    shape = (1, cfg.num_channels, cfg.image_size, cfg.image_size)
    return {"pixel_values": torch.randn(shape, generator=_generator())}


def image_inputs(size: int) -> Callable[[nn.Module], Inputs]:
    def make(model: nn.Module) -> Inputs:
        return {"x": torch.randn((1, 3, size, size), generator=_generator())}

    return make


def build_mlp100() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(100):
        layers += [nn.Linear(16, 16), nn.ReLU()]
    return nn.Sequential(*layers)


def mlp_inputs(model: nn.Module) -> Inputs:
    return {"input": torch.randn((1, 16), generator=_generator())}


# A Llama-shaped decoder stack: the depth (32 layers), grouped-query
# attention and the module structure of a 7B-class model, with a hidden
# size small enough that the forward pass does not hide the guards. Its
# guard tree is that of the full-size model, but for the tensors' sizes.
LLAMA_32_LAYERS: dict[str, Any] = {
    "num_hidden_layers": 32,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 64,
}
DECODE_PROMPT_TOKENS = 8


def llama_decode_inputs(model: nn.Module) -> Inputs:
    """One decode step: the next token, at position DECODE_PROMPT_TOKENS, of
    a sequence whose prompt fills a static KV cache (written in place, at
    the position each layer's cache counts; rewind_decode_step puts that
    count back, so every call guards and runs the same step)."""
    transformers = import_or_unavailable("transformers")
    cfg = model.config  # type: ignore[union-attr]
    cache = transformers.StaticCache(config=cfg, max_cache_len=cfg.max_position_embeddings)
    prompt = torch.randint(0, cfg.vocab_size, (1, DECODE_PROMPT_TOKENS), generator=_generator())
    with torch.no_grad():
        model(input_ids=prompt, cache=cache, use_cache=True)
    return {
        "input_ids": torch.randint(0, cfg.vocab_size, (1, 1), generator=_generator()),
        "cache": cache,
        "cache_position": torch.tensor([DECODE_PROMPT_TOKENS]),
        "use_cache": True,
    }


def rewind_decode_step(inputs: Inputs) -> None:
    for layer in inputs["cache"].layers:
        layer.cumulative_length.fill_(DECODE_PROMPT_TOKENS)  # in place: a guard sees the same tensor


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("mobilebert", _transformers_model("MobileBertModel", "MobileBertConfig"), token_inputs),
        ModelSpec(
            "mobilebert_train",
            _transformers_model("MobileBertModel", "MobileBertConfig"),
            token_inputs,
            train=True,
        ),
        ModelSpec("mlp100", build_mlp100, mlp_inputs),
        ModelSpec(
            "llama32_decode",
            _transformers_model("LlamaForCausalLM", "LlamaConfig", **LLAMA_32_LAYERS),
            llama_decode_inputs,
            rewind=rewind_decode_step,
        ),
        # The same stack over a 16-token prompt without a cache (a prefill).
        ModelSpec("llama32", _transformers_model("LlamaForCausalLM", "LlamaConfig", **LLAMA_32_LAYERS), token_inputs),
        ModelSpec("bert", _transformers_model("BertModel", "BertConfig"), token_inputs),
        ModelSpec("distilbert", _transformers_model("DistilBertModel", "DistilBertConfig"), token_inputs),
        ModelSpec("gpt2", _transformers_model("GPT2Model", "GPT2Config"), token_inputs),
        ModelSpec("t5-small", _transformers_model("T5Model", "T5Config"), encoder_decoder_inputs),
        # 32x32 images (4 patches): the guard tree is that of the default ViT,
        # the forward pass is short enough for the e2e difference to show.
        ModelSpec("vit", _transformers_model("ViTModel", "ViTConfig", image_size=32), hf_image_inputs),
        # `make bench-timm` installs timm and torchvision (which timm imports)
        # and runs these two; `make setup` installs neither, so elsewhere they
        # report themselves unavailable.
        # Small images for the same reason as "vit": the guard trees are
        # those of 224x224 inputs, but for the input's sizes.
        ModelSpec("timm_resnet50", _timm_model("resnet50"), image_inputs(64)),
        ModelSpec("timm_vit", _timm_model("vit_base_patch16_224", img_size=32), image_inputs(32)),
    )
}
DEFAULT_MODELS: tuple[str, ...] = ("mobilebert", "mlp100", "llama32_decode")

# The zoo: transformers architectures picked for breadth (encoder-only,
# decoder-only, encoder-decoder, vision), not for how the fork does on them,
# each from a 2-layer config of width 64 with random weights, in eval mode.
# Every name a config class does not use is ignored by it, so one dict
# serves them all; only the vision models need their own shapes.
ZOO_TEXT_CONFIG: dict[str, Any] = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "max_position_embeddings": 128,
    # BERT-like encoders with a factorized embedding (ALBERT, ELECTRA, MobileBERT)
    "embedding_size": 64,
    # encoder-decoders (BART family; T5 below)
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    "d_kv": 16,
    "d_ff": 128,
    # GPT-2 and BLOOM names
    "n_layer": 2,
    "n_embd": 64,
    "n_head": 4,
    "n_positions": 128,
}
ZOO_TEXT: tuple[tuple[str, Callable[[nn.Module], Inputs]], ...] = (
    ("Bert", token_inputs),
    ("Roberta", token_inputs),
    ("XLMRoberta", token_inputs),
    ("DistilBert", token_inputs),
    ("Albert", token_inputs),
    ("Electra", token_inputs),
    ("Deberta", token_inputs),
    ("DebertaV2", token_inputs),
    ("MobileBert", token_inputs),
    ("MPNet", token_inputs),
    ("ConvBert", token_inputs),
    ("SqueezeBert", token_inputs),
    ("RoFormer", token_inputs),
    ("Nystromformer", token_inputs),
    ("GPT2", token_inputs),
    ("GPTNeoX", token_inputs),
    ("OPT", token_inputs),
    ("Bloom", token_inputs),
    ("Llama", token_inputs),
    ("Mistral", token_inputs),
    ("Qwen2", token_inputs),
    ("Qwen3", token_inputs),
    ("Phi", token_inputs),
    ("Gemma", token_inputs),
    ("Gemma2", token_inputs),
    ("StableLm", token_inputs),
    ("Olmo", token_inputs),
    ("T5", encoder_decoder_inputs),
    ("Bart", encoder_decoder_inputs),
    ("MBart", encoder_decoder_inputs),
    ("Pegasus", encoder_decoder_inputs),
)
ZOO_VISION_CONFIG: dict[str, Any] = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "image_size": 32,
    "patch_size": 8,
}
ZOO_VISION: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ViT", {}),
    ("DeiT", {}),
    ("Beit", {}),
    ("Dinov2", {}),
    ("ConvNext", {"depths": [1, 1], "hidden_sizes": [16, 32]}),
    ("ResNet", {"depths": [1, 1], "hidden_sizes": [16, 32], "embedding_size": 16}),
)


def fixed_image_inputs(model: nn.Module) -> Inputs:
    return {"pixel_values": torch.randn((1, 3, 32, 32), generator=_generator())}


ZOO: tuple[ModelSpec, ...] = tuple(
    ModelSpec(f"zoo_{arch.lower()}", _transformers_model(f"{arch}Model", f"{arch}Config", **ZOO_TEXT_CONFIG), inputs)
    for arch, inputs in ZOO_TEXT
) + tuple(
    ModelSpec(
        f"zoo_{arch.lower()}",
        _transformers_model(f"{arch}Model", f"{arch}Config", **ZOO_VISION_CONFIG, **shapes),
        fixed_image_inputs,
    )
    for arch, shapes in ZOO_VISION
)
MODELS.update((spec.name, spec) for spec in ZOO)
# --models zoo: every model of the zoo.
ZOO_GROUP = "zoo"


def grad_mode(spec: ModelSpec) -> ContextManager[Any]:
    return torch.enable_grad() if spec.train else torch.no_grad()


def prepare_model(spec: ModelSpec) -> tuple[nn.Module, Inputs]:
    torch.manual_seed(SEED)
    model = spec.build()
    model.train(spec.train)
    return model, spec.make_inputs(model)


def selected_models(names: str) -> list[ModelSpec]:
    specs = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        if name == ZOO_GROUP:
            specs.extend(ZOO)
            continue
        if name not in MODELS:
            raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        specs.append(MODELS[name])
    return specs


__all__ = ["DEFAULT_MODELS", "MODELS", "ZOO", "ZOO_GROUP", "Inputs", "ModelSpec", "ModelUnavailable", "grad_mode", "prepare_model",
           "selected_models"]

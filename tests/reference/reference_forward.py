#!/usr/bin/env python3
"""Float64 reference forward pass and greedy generation for Hugging Face causal LMs, written from
the transformers modeling code of each family, to compare the engine's logits against.

  /usr/bin/python3 tests/reference/reference_forward.py MODEL_DIR --prompt 1,5,9 --steps 64 --out OUT.json

Families (config model_type): llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gemma3_text, mixtral,
qwen2_moe, qwen3_moe. Every step recomputes the whole sequence (no KV cache), so the rotary
tables that depend on the sequence length (dynamic NTK, longrope) are those of a forward pass
over the prompt plus the tokens generated so far, as in transformers without a cache.

Output JSON: architecture, prompt, tokens (the generated ids, argmax with the lowest index on
ties), logits (for each step the vocabulary logits that chose tokens[i]) and margins (top-1 minus
top-2 logit of each step).
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "mixtral", "qwen2_moe",
            "qwen3_moe")
# transformers' config defaults for tie_word_embeddings where config.json leaves it out.
TIE_DEFAULT = {"gemma": True, "gemma2": True, "gemma3_text": True}


# ----------------------------------------------------------------------------------------------
# safetensors

def load_safetensors(path):
    """name -> float64 array. F32, F16 and BF16 (BF16 is the top half of an F32)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        dtype = info["dtype"]
        if dtype == "F32":
            a = np.frombuffer(raw, "<f4")
        elif dtype == "F16":
            a = np.frombuffer(raw, "<f2")
        elif dtype == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view("<f4")
        else:
            sys.exit(f"reference_forward: {name}: dtype {dtype} not supported")
        tensors[name] = a.astype(np.float64).reshape(info["shape"])
    return tensors


def load_model_dir(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for name in files:
        weights.update(load_safetensors(os.path.join(model_dir, name)))
    return config, weights


# ----------------------------------------------------------------------------------------------
# rotary embeddings (transformers modeling_rope_utils)

def rope_type_of(scaling):
    if not scaling:
        return "default"
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    return "longrope" if kind == "su" else kind


def default_inv_freq(base, dim):
    return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))


def rope_tables(rope, seq_len):
    """(inv_freq, attention_scaling) for a forward pass over seq_len tokens.

    rope: dict(theta, scaling, dim (rotary dims), max_pos, original_max_pos (top-level key or None))."""
    base, scaling, dim, max_pos = rope["theta"], rope["scaling"], rope["dim"], rope["max_pos"]
    kind = rope_type_of(scaling)
    if kind == "default":
        return default_inv_freq(base, dim), 1.0
    if kind == "linear":
        return default_inv_freq(base, dim) / scaling["factor"], 1.0
    if kind == "dynamic":
        # _compute_dynamic_ntk_parameters with seq_len = max(position_ids) + 1, floored at max_pos.
        factor = scaling["factor"]
        n = max(seq_len, max_pos)
        base = base * ((factor * n / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        return default_inv_freq(base, dim), 1.0
    if kind == "yarn":
        return yarn(base, dim, max_pos, scaling)
    if kind == "llama3":
        return llama3(base, dim, scaling), 1.0
    if kind == "longrope":
        return longrope(base, dim, max_pos, rope["original_max_pos"], scaling, seq_len)
    sys.exit(f"reference_forward: rope type {kind!r} not supported")


def yarn(base, dim, max_pos, scaling):
    """_compute_yarn_parameters: factor as given; original_max_position_embeddings from rope_scaling
    (else max_position_embeddings) bounds the correction range."""
    factor = scaling["factor"]
    original = scaling.get("original_max_position_embeddings") or max_pos
    mscale, mscale_all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")

    def get_mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)
    beta_fast = scaling.get("beta_fast") or 32
    beta_slow = scaling.get("beta_slow") or 1

    def correction_dim(rotations):
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    pos_freqs = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation_factor) + (1.0 / pos_freqs) * extrapolation_factor
    return inv_freq, attention_factor


def llama3(base, dim, scaling):
    inv_freq = default_inv_freq(base, dim)
    factor, low_ff, high_ff = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low_ff, old_context / high_ff
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low_ff) / (high_ff - low_ff)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(medium, smoothed, scaled)


def longrope(base, dim, max_pos, top_original, scaling, seq_len):
    """_compute_longrope_parameters + longrope_frequency_update: long_factor once the sequence is
    longer than original_max_position_embeddings (Phi-3 keeps it at the top level of config.json;
    then factor = max_position_embeddings / original_max_position_embeddings)."""
    factor = scaling.get("factor")
    if top_original is not None:
        original = top_original
        factor = max_pos / original
    else:
        original = scaling.get("original_max_position_embeddings") or max_pos
    attention_factor = scaling.get("attention_factor")
    if attention_factor is None:
        if factor is None or factor <= 1.0:
            attention_factor = 1.0
        else:
            attention_factor = math.sqrt(1 + math.log(factor) / math.log(original))
    ext = np.asarray(scaling["long_factor"] if seq_len > original else scaling["short_factor"], dtype=np.float64)
    inv_freq = 1.0 / (ext * base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    return inv_freq, attention_factor


def rotate(x, inv_freq, attention_scaling):
    """apply_rotary_pos_emb with rotate_half on the first 2 * len(inv_freq) dims of x (T, heads, D);
    positions 0..T-1; cos and sin carry the attention scaling."""
    t = x.shape[0]
    freqs = np.arange(t, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos = (np.cos(emb) * attention_scaling)[:, None, :]
    sin = (np.sin(emb) * attention_scaling)[:, None, :]
    rot = emb.shape[-1]
    xr, xpass = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = np.concatenate([-xr[..., half:], xr[..., :half]], axis=-1)
    return np.concatenate([xr * cos + rotated * sin, xpass], axis=-1)


# ----------------------------------------------------------------------------------------------
# the model

def act(name):
    if name == "silu":
        return lambda x: x / (1.0 + np.exp(-x))
    if name in ("gelu_pytorch_tanh", "gelu_new", "gelu_fast"):
        return lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "gelu":
        erf = np.vectorize(math.erf)
        return lambda x: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    sys.exit(f"reference_forward: activation {name!r} not supported")


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def dtype_round(value, torch_dtype):
    """A Python float as torch.tensor(value, dtype=torch_dtype) holds it."""
    v = np.float32(value)
    if torch_dtype == "float16":
        return float(np.float16(value))
    if torch_dtype == "bfloat16":
        u = int(v.view(np.uint32))
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        return float(np.uint32(u).view(np.float32))
    return float(v)


class Model:
    def __init__(self, config, weights, normalizer_dtype=None):
        """normalizer_dtype: the dtype Gemma's sqrt(hidden_size) embedding normalizer is rounded to
        (transformers makes it a tensor of the activations' dtype); default config's torch_dtype."""
        self.c, self.w = config, weights
        self.normalizer_dtype = normalizer_dtype or config.get("torch_dtype") or "float32"
        c = config
        self.family = c["model_type"]
        if self.family not in FAMILIES:
            sys.exit(f"reference_forward: model_type {self.family!r} not supported ({', '.join(FAMILIES)})")
        self.gemma = self.family in ("gemma", "gemma2", "gemma3_text")
        self.sandwich = self.family in ("gemma2", "gemma3_text")  # norms after each half too
        self.heads, self.kv_heads = c["num_attention_heads"], c.get("num_key_value_heads") or c["num_attention_heads"]
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        self.layers = c["num_hidden_layers"]
        self.eps = c.get("rms_norm_eps", 1e-6)
        if self.family == "gemma":  # transformers runs Gemma 1's "gelu" as the tanh approximation
            act_name = c.get("hidden_activation") or "gelu_pytorch_tanh"
        elif self.gemma:
            act_name = c.get("hidden_activation") or c.get("hidden_act")
        else:
            act_name = c.get("hidden_act", "silu")
        self.act = act(act_name or "gelu_pytorch_tanh")
        if self.gemma:
            self.scaling = c.get("query_pre_attn_scalar", self.head_dim) ** -0.5
        else:
            self.scaling = self.head_dim ** -0.5
        self.attn_softcap = c.get("attn_logit_softcapping") if self.gemma else None
        self.final_softcap = c.get("final_logit_softcapping") if self.gemma else None
        tie = c.get("tie_word_embeddings", TIE_DEFAULT.get(self.family, False))
        self.head = weights["model.embed_tokens.weight"] if tie or "lm_head.weight" not in weights \
            else weights["lm_head.weight"]
        if not tie and "lm_head.weight" not in weights:
            sys.exit("reference_forward: tie_word_embeddings is false but there is no lm_head.weight")
        self.windows = [self.layer_window(i) for i in range(self.layers)]
        self.ropes = [self.layer_rope(i) for i in range(self.layers)]

    # -- per-layer attention pattern and rotary ------------------------------------------------

    def layer_types(self):
        c = self.c
        if c.get("layer_types"):
            return c["layer_types"]
        if self.family == "gemma2":
            return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(self.layers)]
        if self.family == "gemma3_text":
            pattern = c.get("sliding_window_pattern", c.get("_sliding_window_pattern", 6))
            return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(self.layers)]
        if self.family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
            sliding = c.get("use_sliding_window") and c.get("sliding_window") is not None
            start = c.get("max_window_layers", self.layers)
            return ["sliding_attention" if sliding and i >= start else "full_attention" for i in range(self.layers)]
        if self.family in ("mistral", "mixtral", "phi3"):
            kind = "sliding_attention" if c.get("sliding_window") is not None else "full_attention"
            return [kind] * self.layers
        return ["full_attention"] * self.layers

    def layer_window(self, i):
        c = self.c
        window = c.get("sliding_window")
        if self.family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe") and not c.get("use_sliding_window"):
            window = None  # the Qwen configs drop sliding_window unless use_sliding_window
        return window if self.layer_types()[i] == "sliding_attention" else None

    def layer_rope(self, i):
        c = self.c
        theta, scaling = c.get("rope_theta", 10000.0), c.get("rope_scaling")
        params = c.get("rope_parameters")  # transformers v5 layout
        sliding = self.layer_types()[i] == "sliding_attention"
        if params:
            if "rope_theta" not in params and self.family == "gemma3_text":
                params = params["sliding_attention" if sliding else "full_attention"]
            theta, scaling = params.get("rope_theta", theta), params
        elif self.family == "gemma3_text" and sliding:
            theta, scaling = c.get("rope_local_base_freq", 10000.0), None
        dim = int(self.head_dim * c.get("partial_rotary_factor", 1.0))
        return dict(theta=theta, scaling=scaling, dim=dim, max_pos=c.get("max_position_embeddings", 2048),
                    original_max_pos=c.get("original_max_position_embeddings"))

    # -- blocks --------------------------------------------------------------------------------

    def norm(self, x, name):
        w = self.w[name]
        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps)
        return y * (1.0 + w) if self.gemma else y * w

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def attention_mask(self, i, t, or_mask=None):
        """(t, t) bool, layer i: query q may attend key k. Causal (k <= q), on a sliding layer also
        q - k < sliding_window; then OR or_mask (t, t) where given (transformers' or_mask_function,
        applied after the window: Gemma 3's bidirectional image blocks)."""
        qi, kj = np.arange(t)[:, None], np.arange(t)[None, :]
        allowed = kj <= qi
        if self.windows[i] is not None:
            allowed &= (qi - kj) < self.windows[i]
        return allowed if or_mask is None else allowed | or_mask

    def attention(self, x, i, rotary=None, or_mask=None):
        p = f"model.layers.{i}.self_attn."
        t, hd, nh, nkv = x.shape[0], self.head_dim, self.heads, self.kv_heads
        if self.family == "phi3":
            qkv = self.linear(x, p + "qkv_proj")
            q, k, v = qkv[:, :nh * hd], qkv[:, nh * hd:(nh + nkv) * hd], qkv[:, (nh + nkv) * hd:]
        else:
            q, k, v = self.linear(x, p + "q_proj"), self.linear(x, p + "k_proj"), self.linear(x, p + "v_proj")
        q, k, v = q.reshape(t, nh, hd), k.reshape(t, nkv, hd), v.reshape(t, nkv, hd)
        if p + "q_norm.weight" in self.w:  # qwen3, qwen3_moe, gemma3: per-head RMSNorm before rotary
            q, k = self.norm(q, p + "q_norm.weight"), self.norm(k, p + "k_norm.weight")
        inv_freq, attention_scaling = rope_tables(self.ropes[i], t)
        rotary = rotary or rotate
        q, k = rotary(q, inv_freq, attention_scaling), rotary(k, inv_freq, attention_scaling)
        group = nh // nkv
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # repeat_kv: head h reads h // group
        scores = np.einsum("qhd,khd->hqk", q, k) * self.scaling
        if self.attn_softcap:
            scores = np.tanh(scores / self.attn_softcap) * self.attn_softcap
        scores = np.where(self.attention_mask(i, t, or_mask)[None], scores, -np.inf)
        out = np.einsum("hqk,khd->qhd", softmax(scores), v).reshape(t, nh * hd)
        return self.linear(out, p + "o_proj")

    def dense_mlp(self, x, p):
        if self.family == "phi3":
            gate_up = self.linear(x, p + "gate_up_proj")
            gate, up = np.split(gate_up, 2, axis=-1)
            return self.linear(up * self.act(gate), p + "down_proj")
        return self.linear(self.act(self.linear(x, p + "gate_proj")) * self.linear(x, p + "up_proj"), p + "down_proj")

    def moe(self, x, p, experts, top_k, normalise, names):
        """softmax router over all experts, top-k (lowest index first among equals), optional
        renormalisation of the chosen weights, weighted sum of the chosen experts' outputs."""
        probs = softmax(x @ self.w[p + "gate.weight"].T)
        order = np.argsort(-probs, axis=-1, kind="stable")[:, :top_k]
        chosen = np.take_along_axis(probs, order, axis=-1)
        if normalise:
            chosen = chosen / chosen.sum(-1, keepdims=True)
        weights = np.zeros_like(probs)
        np.put_along_axis(weights, order, chosen, axis=-1)
        out = np.zeros_like(x)
        gate_name, up_name, down_name = names
        for e in range(experts):
            rows = np.nonzero(weights[:, e])[0]
            if rows.size == 0:
                continue
            q = f"{p}experts.{e}."
            xe = x[rows]
            y = self.linear(self.act(self.linear(xe, q + gate_name)) * self.linear(xe, q + up_name), q + down_name)
            out[rows] += weights[rows, e:e + 1] * y
        return out

    def mlp(self, x, i):
        c, p = self.c, f"model.layers.{i}."
        if self.family == "mixtral":
            return self.moe(x, p + "block_sparse_moe.", c["num_local_experts"], c["num_experts_per_tok"], True,
                            ("w1", "w3", "w2"))
        if self.family in ("qwen2_moe", "qwen3_moe"):
            sparse = (i not in c.get("mlp_only_layers", []) and c.get("num_experts", 0) > 0
                      and (i + 1) % c.get("decoder_sparse_step", 1) == 0)
            if sparse:
                out = self.moe(x, p + "mlp.", c["num_experts"], c["num_experts_per_tok"], c.get("norm_topk_prob", False),
                               ("gate_proj", "up_proj", "down_proj"))
                if p + "mlp.shared_expert_gate.weight" in self.w:
                    gate = 1.0 / (1.0 + np.exp(-(x @ self.w[p + "mlp.shared_expert_gate.weight"].T)))
                    out = out + gate * self.dense_mlp(x, p + "mlp.shared_expert.")
                return out
        return self.dense_mlp(x, p + "mlp.")

    def logits(self, ids, inputs_embeds=None, rotary=None, or_mask=None):
        """Logits (T, vocab) for every position of ids, or of inputs_embeds (T, hidden_size) when
        given (a multimodal model's token embeddings with its image features put in). rotary, when
        given, replaces rotate: f(x (T, heads, head_dim), inv_freq, attention_scaling) -> rotated x,
        for positions other than 0..T-1 (Qwen2.5-VL's M-RoPE). or_mask (T, T) bool, when given,
        lets query q attend key k wherever it is true, on every layer (see attention_mask)."""
        logits = self.hidden(ids, inputs_embeds, rotary, or_mask) @ self.head.T
        if self.final_softcap:
            logits = np.tanh(logits / self.final_softcap) * self.final_softcap
        return logits

    def hidden(self, ids, inputs_embeds=None, rotary=None, or_mask=None):
        """Final hidden states (T, hidden_size), after the model's last norm. Gemma 1 and 2 scale
        inputs_embeds by the normalizer inside the model; Gemma 3 scales in its embedding module
        (Gemma3TextScaledWordEmbedding), so inputs_embeds given to it are taken as they are."""
        x = self.w["model.embed_tokens.weight"][np.asarray(ids)] if inputs_embeds is None else inputs_embeds
        if self.gemma and (inputs_embeds is None or self.family != "gemma3_text"):
            x = x * dtype_round(self.c["hidden_size"] ** 0.5, self.normalizer_dtype)  # a tensor of the model's dtype
        for i in range(self.layers):
            p = f"model.layers.{i}."
            if self.sandwich:
                h = self.norm(self.attention(self.norm(x, p + "input_layernorm.weight"), i, rotary, or_mask),
                              p + "post_attention_layernorm.weight")
                x = x + h
                h = self.norm(self.mlp(self.norm(x, p + "pre_feedforward_layernorm.weight"), i),
                              p + "post_feedforward_layernorm.weight")
                x = x + h
            else:
                x = x + self.attention(self.norm(x, p + "input_layernorm.weight"), i, rotary, or_mask)
                x = x + self.mlp(self.norm(x, p + "post_attention_layernorm.weight"), i)
        return self.norm(x, "model.norm.weight")


def greedy(model, prompt, steps):
    ids, tokens, all_logits, margins = list(prompt), [], [], []
    for _ in range(steps):
        logits = model.logits(ids)[-1]
        token = int(np.argmax(logits))  # first maximum: lowest index on ties
        top2 = np.partition(logits, -2)[-2:]
        tokens.append(token)
        all_logits.append(logits)
        margins.append(float(top2[1] - top2[0]))
        ids.append(token)
    return tokens, all_logits, margins


def embed(model_dir, prompt, pooling, normalize=True):
    """vLLM's pooler for a decoder model: the last token's final hidden state or the mean over
    the prompt, L2-normalised."""
    config, weights = load_model_dir(model_dir)
    h = Model(config, weights).hidden(prompt)
    v = h[-1] if pooling == "LAST" else h.mean(axis=0)
    if normalize:
        v = v / np.linalg.norm(v)
    return {"embedding": [float(x) for x in v]}


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def prompt_logprobs(model_dir, prompt, k):
    """vLLM's prompt_logprobs: for each prompt token after the first, its log-probability given
    the tokens before it, its rank (1 + the number of more likely tokens; rank_range: the ranks
    a float32 computation may give where other tokens are within 1e-5) and the top k
    [id, logprob] (most likely first, lowest id on ties); None for the first token."""
    config, weights = load_model_dir(model_dir)
    rows = log_softmax(Model(config, weights).logits(prompt))
    entries = [None]
    for i in range(1, len(prompt)):
        row, token = rows[i - 1], prompt[i]
        order = np.lexsort((np.arange(row.size), -row))[:k]
        # float32 may order tokens within about 1e-5 of this one either way: the ranks it can give.
        entries.append({"token": token, "logprob": float(row[token]),
                        "rank": int(1 + np.count_nonzero(row > row[token])),
                        "rank_range": [int(1 + np.count_nonzero(row > row[token] + 1e-5)),
                                       int(1 + np.count_nonzero(row > row[token] - 1e-5))],
                        "top": [[int(t), float(row[t])] for t in order]})
    return {"prompt": list(prompt), "prompt_logprobs": entries}


def beam_search(model_dir, prompt, width, max_tokens, length_penalty=1.0, early_stopping=False):
    """vLLM's beam search: each round every beam's 2 * width most likely next tokens are
    candidates; the end token's complete a beam, the width others of highest summed logprob go
    on. The answer: the width best of the complete and running beams by summed logprob over
    (prompt + output tokens, a final end token not counted) ** length_penalty."""
    config, weights = load_model_dir(model_dir)
    model = Model(config, weights)
    eos = config.get("eos_token_id")
    eos = set(eos if isinstance(eos, list) else [eos])
    beams, complete = [(list(prompt), 0.0)], []
    for _ in range(max_tokens):
        candidates = []
        for tokens, total in beams:
            row = log_softmax(model.logits(tokens)[-1])
            for t in np.lexsort((np.arange(row.size), -row))[:2 * width]:
                entry = (tokens + [int(t)], total + float(row[t]))
                (complete if int(t) in eos else candidates).append(entry)
        candidates.sort(key=lambda e: -e[1])  # stable: earlier beam, likelier token first
        beams = candidates[:width]
        if not beams or (early_stopping and len(complete) >= width):
            break

    def score(entry):
        tokens, total = entry
        return total / (len(tokens) - (1 if tokens[-1] in eos else 0)) ** length_penalty

    answer = sorted([(e, "stop") for e in complete] + [(e, "length") for e in beams],
                    key=lambda p: -score(p[0]))[:width]
    return {"prompt": list(prompt), "beams": [
        {"tokens": e[0][len(prompt):], "cumulative_logprob": e[1], "score": score(e),
         "finish": finish} for e, finish in answer]}


def run(model_dir, prompt, steps, normalizer_dtype=None):
    config, weights = load_model_dir(model_dir)
    model = Model(config, weights, normalizer_dtype)
    tokens, logits, margins = greedy(model, prompt, steps)
    return {"architecture": (config.get("architectures") or [config["model_type"]])[0], "prompt": list(prompt),
            "tokens": tokens, "logits": [[float(v) for v in row] for row in logits], "margins": margins}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--prompt", default="1", help="comma-separated token ids")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--out", help="output JSON (default: stdout)")
    ap.add_argument("--embed", choices=["LAST", "MEAN"],
                    help="print the pooled, normalised embedding of the prompt instead")
    ap.add_argument("--prompt-logprobs", type=int, metavar="K",
                    help="print each prompt token's logprob, rank and top K instead")
    ap.add_argument("--beam-width", type=int, metavar="N",
                    help="print vLLM's beam search over --steps tokens instead")
    ap.add_argument("--length-penalty", type=float, default=1.0)
    ap.add_argument("--early-stopping", action="store_true")
    ap.add_argument("--normalizer-dtype", choices=["float32", "bfloat16", "float16"],
                    help="Gemma: round sqrt(hidden_size) to this dtype (default: config torch_dtype)")
    args = ap.parse_args()
    prompt = [int(x) for x in args.prompt.split(",") if x.strip()]
    if not prompt:
        sys.exit("reference_forward: the prompt is empty")
    if args.embed or args.prompt_logprobs is not None or args.beam_width:
        if args.embed:
            result = embed(args.model_dir, prompt, args.embed)
        elif args.beam_width:
            result = beam_search(args.model_dir, prompt, args.beam_width, args.steps,
                                 args.length_penalty, args.early_stopping)
        else:
            result = prompt_logprobs(args.model_dir, prompt, args.prompt_logprobs)
        text = json.dumps(result)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        else:
            print(text)
        return
    result = run(args.model_dir, prompt, args.steps, args.normalizer_dtype)
    text = json.dumps(result)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"reference_forward: {result['architecture']}: {len(result['tokens'])} tokens, "
              f"min margin {min(result['margins'], default=float('nan')):.4g} -> {args.out}")
    else:
        print(text)


if __name__ == "__main__":
    main()

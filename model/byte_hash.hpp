#pragma once
/// A fast 64-bit hash of bytes: what a stored KV block is checked against on its way back
/// (kv_tier_store), and what keys an image's pixels (the encoder cache, the prefix cache).
#include <cstdint>
#include <span>

namespace actorllm {

/// A 64-bit hash of `bytes` (four multiply-rotate lanes, 32 bytes a round).
uint64_t hash_bytes(std::span<const std::byte> bytes);

}  // namespace actorllm

#pragma once
/// float8 E4M3FN (OCP's FP8 E4M3, "fn": finite, no infinities): 1 sign, 4 exponent (bias 7)
/// and 3 mantissa bits, largest finite 448, one NaN pattern per sign (0x7f, 0xff). The element
/// type of a float8 KV cache (vLLM's --kv-cache-dtype fp8): a quarter of float32's bytes. Only
/// converted to and from float, never computed in.
#include <cstdint>
#include <cstring>

namespace actorllm::cpu {

struct float8_e4m3 {
  uint8_t bits = 0;

  float8_e4m3() = default;
  /// Rounded to nearest (ties to even); beyond ±448 saturates to ±448, as vLLM's cast does,
  /// and NaN stays NaN.
  explicit float8_e4m3(float value) : bits(encode(value)) {}
  explicit operator float() const { return decode(bits); }

  static uint8_t encode(float value) {
    uint32_t x;
    std::memcpy(&x, &value, 4);
    const auto sign = static_cast<uint8_t>((x >> 24) & 0x80);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) return sign | 0x7f;  // NaN
    float magnitude;
    std::memcpy(&magnitude, &x, 4);
    if (magnitude >= 448.0f) return sign | 0x7e;
    if (magnitude < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (8 rounds up to 2^-6)
      const float steps = magnitude * 512.0f;
      auto m = static_cast<uint32_t>(steps);
      const float rest = steps - static_cast<float>(m);
      if (rest > 0.5f || (rest == 0.5f && (m & 1))) ++m;
      return sign | static_cast<uint8_t>(m);
    }
    // Normal: keep 3 of float's 23 mantissa bits, ties to even (a carry moves the exponent).
    const uint32_t rounded = x + 0x7ffffu + ((x >> 20) & 1u);
    const int exponent = static_cast<int>((rounded >> 23) & 0xff) - 127 + 7;
    const uint32_t mantissa = (rounded >> 20) & 7u;
    if (exponent > 15 || (exponent == 15 && mantissa == 7)) return sign | 0x7e;
    return sign | static_cast<uint8_t>((exponent << 3) | mantissa);
  }

  static float decode(uint8_t code) {
    const int exponent = (code >> 3) & 0xf;
    const int mantissa = code & 7;
    float magnitude;
    if (exponent == 15 && mantissa == 7) {
      const uint32_t nan = 0x7fc00000u;
      std::memcpy(&magnitude, &nan, 4);
    } else if (exponent == 0) {
      magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f);
    } else {
      const uint32_t bits =
          static_cast<uint32_t>(exponent - 7 + 127) << 23 | static_cast<uint32_t>(mantissa) << 20;
      std::memcpy(&magnitude, &bits, 4);
    }
    return code & 0x80 ? -magnitude : magnitude;
  }
};
static_assert(sizeof(float8_e4m3) == 1);

}  // namespace actorllm::cpu

// sinew/compress.hpp: gradient compressors for dist::Compressed (compress/compressor_spec.hpp).
//
//   compress::Fp16, compress::Bf16   16 bits a value (torch's fp16 and bf16 comm hooks)
//   compress::OneBit                 1 bit a value with per-column scales and error feedback (CNTK's 1-bit SGD)
//   compress::PowerSgd<Rank>         rank-r power iteration with warm start and error feedback (Vogels et al.)
#pragma once

#include "sinew/compress/bf16.hpp"
#include "sinew/compress/compressor_spec.hpp"
#include "sinew/compress/fp16.hpp"
#include "sinew/compress/one_bit.hpp"
#include "sinew/compress/power_sgd.hpp"

// The acceptance rule of speculative decoding, as pure functions on
// distributions (docs/speculative.md explains why it keeps the output
// distribution exactly the target's).
//
// p: the distribution the target model's sampler draws the next token from
// (probability_distribution() of the verification row: penalties over the
// tokens so far, temperature, top-k/p, min-p); q: the proposer's distribution
// over its draft token x. The exact rule (Leviathan et al. 2023, Chen et al.
// 2023): accept x with probability min(1, p(x) / q(x)); otherwise draw from
// max(0, p - q) normalised. Greedy is the case p one-hot on the argmax.
//
// Tests: tests/engine/runtime/rejection_sampler_test.cpp (>= 100k draws per
// case against p, by total variation distance).
#pragma once

#include <cstdint>
#include <span>

#include "runtime/sampler.h"

namespace kvscope {

struct DraftVerdict {
  int32_t token = -1;     // the token emitted at this position
  bool accepted = false;  // token == the draft
};

// A deterministic proposer (q one-hot on `draft`, the n-gram proposer):
// min(1, p(x)/q(x)) = p(x), and max(0, p - q) is p with x removed. Realised
// with ONE uniform u in [0, 1): token = draw_token(p, u), accepted = (token ==
// draft). P(accepted) = p(x), and after a rejection the token is y != x with
// probability p(y) / (1 - p(x)): exactly the rule. The token is also the one
// plain sampling draws with the same u, so the engine verifies a draft by
// calling Sampler::sample on the row and comparing: a sampled reply with a
// fixed seed is the same, token for token, with speculation on or off.
// Precondition: p is not empty.
DraftVerdict verify_deterministic_draft(std::span<const TokenProb> p, int32_t draft, double u);

// Any proposer (the draft drawn from q). u_accept decides acceptance, u_residual
// draws the replacement from max(0, p - q) normalised (from p itself if that
// is all zero, which only rounding can cause: then p == q and acceptance was
// certain). p and q list (id, probability) in any order; an id not listed has
// probability 0. Preconditions: p is not empty, q(draft) > 0.
DraftVerdict verify_draft(std::span<const TokenProb> p, std::span<const TokenProb> q, int32_t draft,
                          double u_accept, double u_residual);

}  // namespace kvscope

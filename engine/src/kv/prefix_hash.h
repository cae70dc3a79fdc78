// Prefix hashes of full KV blocks: hash(parent hash, the block's token ids).
// Chaining makes a block's hash name its whole prefix, so equal hashes mean
// equal prefixes up to collisions, which the prefix cache guards against by
// comparing tokens. A request's cache salt seeds the chain, so requests with
// different salts never share blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace kvscope {

// Seed of a chain: depends only on the salt (empty salt: a fixed constant).
uint64_t prefix_hash_seed(std::string_view salt);
// Never returns 0 (0 means "no hash" in BlockPool).
uint64_t prefix_hash(uint64_t parent, std::span<const int32_t> tokens);

}  // namespace kvscope

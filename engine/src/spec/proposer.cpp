#include "spec/proposer.h"

#include <algorithm>

#include "spec/model_proposer.h"
#include "spec/ngram_proposer.h"

namespace kvscope {

std::unique_ptr<Proposer> make_proposer(const EngineConfig& config) {
  switch (config.spec) {
    case SpecMethod::Off: return nullptr;
    case SpecMethod::Ngram:
      // A min above the max means "the max only": every pair of in-range
      // values is usable, so the two settings can be changed one at a time.
      return std::make_unique<NgramProposer>(std::min(config.spec_ngram_min, config.spec_ngram_max),
                                             config.spec_ngram_max);
    case SpecMethod::Draft:
    case SpecMethod::EarlyExit: return std::make_unique<ModelProposer>(config.spec);
  }
  return nullptr;
}

}  // namespace kvscope

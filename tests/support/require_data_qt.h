// KVSCOPE_REQUIRE_DATA for QTest slots: QSKIP with the fetch command when
// `present` is false, or QFAIL when test data is required
// (KVSCOPE_REQUIRE_TEST_DATA=1 or CI set; see require_data.h).
//
//   if (model_.empty()) ...  ->  KVSCOPE_QREQUIRE_DATA(!model_.empty(), test::TestData::kDefaultModel);
#pragma once

#include <QTest>

#include "support/require_data.h"

#define KVSCOPE_QREQUIRE_DATA(present, what)                                            \
  do {                                                                                  \
    if (!(present)) {                                                                   \
      const std::string kvscope_missing_ = ::kvscope::test::missing_data_message(what); \
      if (::kvscope::test::test_data_required()) QFAIL(kvscope_missing_.c_str());       \
      QSKIP(kvscope_missing_.c_str());                                                  \
    }                                                                                   \
  } while (false)

// EventLog: off by default, records in order when on, drops the oldest events
// past its capacity (and counts them); event type names are unique and invert.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "trace/event_log.h"

namespace kvscope {
namespace {

TEST(EventLog, DisabledByDefaultAndRecordsNothing) {
  EventLog log;
  EXPECT_FALSE(log.enabled());
  log.record(EngineEventType::Admit, 1, 0, 12);
  EXPECT_EQ(log.size(), 0u);
  EXPECT_TRUE(log.take().empty());
}

TEST(EventLog, RecordsInOrderWithNondecreasingTimes) {
  EventLog log;
  log.set_enabled(true);
  EXPECT_TRUE(log.enabled());
  log.record(EngineEventType::StepBegin, 0, 0, 7);
  log.record(EngineEventType::CopyOnWrite, 3, 1, 10, 11);
  log.record(EngineEventType::StepEnd, 0, 0, 64, 4);
  EXPECT_EQ(log.size(), 3u);

  const std::vector<EngineEvent> events = log.take();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(log.size(), 0u);  // take() moves the events out
  EXPECT_EQ(events[0].type, EngineEventType::StepBegin);
  EXPECT_EQ(events[0].value, 7);
  EXPECT_EQ(events[1].type, EngineEventType::CopyOnWrite);
  EXPECT_EQ(events[1].request, 3u);
  EXPECT_EQ(events[1].index, 1);
  EXPECT_EQ(events[1].value, 10);
  EXPECT_EQ(events[1].value2, 11);
  EXPECT_EQ(events[2].value2, 4);
  EXPECT_GE(events[0].time_s, 0.0);
  EXPECT_LE(events[0].time_s, events[1].time_s);
  EXPECT_LE(events[1].time_s, events[2].time_s);
  EXPECT_LE(events[2].time_s, log.now_s());

  log.set_enabled(false);
  log.record(EngineEventType::Admit, 1, 0);
  EXPECT_EQ(log.size(), 0u);
}

TEST(EventLog, CapacityDropsOldestAndCountsThem) {
  EventLog log(4);
  log.set_enabled(true);
  EXPECT_EQ(log.capacity(), 4u);
  for (int64_t i = 0; i < 10; ++i) log.record(EngineEventType::Schedule, 1, 0, i);
  EXPECT_EQ(log.size(), 4u);
  EXPECT_EQ(log.num_dropped(), 6u);

  std::vector<EngineEvent> events = log.take();
  ASSERT_EQ(events.size(), 4u);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].value, static_cast<int64_t>(6 + i));

  // After take() the ring starts over; the drop count is cumulative.
  for (int64_t i = 0; i < 6; ++i) log.record(EngineEventType::Schedule, 1, 0, 100 + i);
  events = log.take();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events.front().value, 102);
  EXPECT_EQ(events.back().value, 105);
  EXPECT_EQ(log.num_dropped(), 8u);
}

TEST(EventLog, DefaultCapacityIsBounded) {
  EventLog log;
  EXPECT_EQ(log.capacity(), EventLog::kDefaultCapacity);
  EXPECT_GT(log.capacity(), 0u);
}

TEST(EngineEventTypeName, NamesAreLowercaseUniqueAndInvert) {
  EXPECT_STREQ(engine_event_type_name(EngineEventType::StepBegin), "step_begin");
  EXPECT_STREQ(engine_event_type_name(EngineEventType::Admit), "admit");
  EXPECT_STREQ(engine_event_type_name(EngineEventType::CacheHit), "cache_hit");
  EXPECT_STREQ(engine_event_type_name(EngineEventType::KvUsage), "kv_usage");
  EXPECT_STREQ(engine_event_type_name(EngineEventType::Cascade), "cascade");
  std::set<std::string> names;
  for (int i = 0; i < kNumEngineEventTypes; ++i) {
    const auto type = static_cast<EngineEventType>(i);
    const std::string name = engine_event_type_name(type);
    EXPECT_NE(name, "unknown");
    for (char c : name) EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || c == '_') << name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(engine_event_type_from_name(name), type);
  }
  EXPECT_FALSE(engine_event_type_from_name("no_such_event").has_value());
}

}  // namespace
}  // namespace kvscope

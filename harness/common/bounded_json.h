// JSON documents read from files the harness wrote but anyone may have replaced or damaged:
// point records, rank 0's measurements, the job ledger, timeline traces. nlohmann's documents are
// recursive (copies, dumps, destruction of some versions), and a document of tiny lists costs
// twenty times its text in memory, so a document is checked with nlohmann's iterative SAX parser,
// which allocates nothing per value, before it is built.
#pragma once

#include <cstddef>
#include <string>

#include "harness/common/json.h"

namespace harness {

// The largest record validation allows is about 770 MB: kMaxStepsPerPoint (2,000,000) steps of 7
// timings of up to 24 characters each and the slowest rank's number (350 MB), plus as many epochs
// of about 210 bytes each when every epoch is one step (420 MB), plus the sample of every rank's
// compute (at most 32,768 values, under 1 MB). A measured long run (90,000 steps of 3,000 epochs) wrote
// 8 MB, 64 bytes per step. Anything larger was not written by the harness.
inline constexpr std::size_t kMaxRecordBytes = std::size_t{1} << 30;
// Records nest about 5 levels deep; experiment files are capped at 256 likewise.
inline constexpr std::size_t kMaxRecordNestingDepth = 256;
// Records' objects hold fewer than 100 keys (their settings about 50). Building an object costs
// its keys squared (ordered_json finds a key by a linear search): one of a million keys would
// take hours.
inline constexpr std::size_t kMaxKeysPerObject = 1000;
// A built document may take at most this many times its text's bytes (plus a little for small
// ones). Records take about 2x (numbers of 5 to 24 characters, 16 bytes each, and objects of a few
// keys); a list of empty lists or of one-digit numbers, which no record holds, takes 8x to 20x.
inline constexpr std::size_t kMaxBytesInMemoryPerTextByte = 6;

// The document in `text`. Throws Error "<path>: ..." in one line when it is not JSON, nests deeper
// than `max_depth`, has an object of more than kMaxKeysPerObject keys or would take more than
// kMaxBytesInMemoryPerTextByte times its size.
Json parse_bounded_json(const std::string& text, const std::string& path,
                        std::size_t max_depth = kMaxRecordNestingDepth);

}  // namespace harness

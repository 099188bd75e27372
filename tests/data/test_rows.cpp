// Splits opened for training (data/rows.hpp): every layout's open_*_split leaves its rows in the
// file and gives the batches the split read into memory gives, bit for bit; the checks run over
// every row at opening, one block at a time, and name the file's row.
#include "attn/data/rows.hpp"

#include <cstring>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/core/rng.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/data/token_data.hpp"
#include "attn/families/caption/caption_data.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/families/transformer/labelled_data.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

constexpr int64_t kN = 37, kVocab = 20;

// Rows of ids in [4, kVocab) up to each row's length, 0 after it: [kN, width] and the lengths.
std::pair<Tensor, Tensor> token_rows(Rng& rng, int64_t width) {
  Tensor ids({kN, width}, DType::i32), len({kN}, DType::i32);
  for (int64_t i = 0; i < kN; ++i) {
    len.idata()[i] = static_cast<int32_t>(1 + rng.uniform_int(width));
    for (int64_t t = 0; t < len.idata()[i]; ++t) ids.idata()[i * width + t] = static_cast<int32_t>(4 + rng.uniform_int(kVocab - 4));
  }
  return {ids, len};
}

Tensor uniform(Rng& rng, Shape shape) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = rng.uniform(0.0f, 1.0f);
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         (a.numel() == 0 || std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0);
}

// A batch order with repeats and rows from both ends, as a shuffled epoch gives.
const std::vector<int64_t> kIndex = {36, 0, 17, 18, 5, 17, 2, 35};

}  // namespace

TEST_CASE("rows: every layout opened for training reads the batches of the split in memory", "[io][rows]") {
  test::TempDir dir;
  Rng rng(7);
  const auto [src, src_len] = token_rows(rng, 9);
  const auto [tgt, tgt_len] = token_rows(rng, 6);
  Tensor segments({kN, 9}, DType::i32);   // sentence B from position 2 of every other row
  for (int64_t i = 0; i < kN; i += 2)
    for (int64_t t = 2; t < src_len.idata()[i]; ++t) segments.idata()[i * 9 + t] = 1;
  Tensor labels({kN}, DType::i32), story({kN, 4, 5}, DType::i32), story_len({kN}, DType::i32);
  Tensor question({kN, 3}, DType::i32), answer({kN}, DType::i32), support({kN, 2}, DType::i32), task({kN}, DType::i32);
  for (int64_t i = 0; i < kN; ++i) {
    labels.idata()[i] = static_cast<int32_t>(i % 3);
    story_len.idata()[i] = static_cast<int32_t>(1 + i % 4);
    for (int64_t k = 0; k < story_len.idata()[i] * 5; ++k) story.idata()[i * 20 + k] = static_cast<int32_t>(4 + (i + k) % 16);
    question.idata()[i * 3] = static_cast<int32_t>(4 + i % 16);
    answer.idata()[i] = static_cast<int32_t>(4 + i % 7);
    support.idata()[i * 2] = 0;
    support.idata()[i * 2 + 1] = -1;
    task.idata()[i] = static_cast<int32_t>(1 + i % 20);
  }
  const Tensor inputs = uniform(rng, {kN, 5, 3}), images = uniform(rng, {kN, 1, 4, 6});
  Tensor targets = uniform(rng, {kN, 4, 2});   // the NTM's targets are bits
  for (float& v : targets.values()) v = v < 0.5f ? 0.0f : 1.0f;
  Tensor in_len({kN}, DType::i32), out_len({kN}, DType::i32);
  for (int64_t i = 0; i < kN; ++i) in_len.idata()[i] = 1 + i % 5, out_len.idata()[i] = 1 + i % 4;
  {
    io::File f = io::File::create(dir.file("all.h5"));
    data::write_token_split(f, "text", {.name = "text", .src = src, .src_len = src_len, .tgt = tgt, .tgt_len = tgt_len, .segments = {}});
    f.write("/text/segments", segments);
    transformer::write_labelled_split(
        f, "cls", {.name = "cls", .src = src, .src_len = src_len, .segments = segments, .label = labels});
    memnet::write_qa_split(f, "qa", {story, story_len, question, answer, support, task});
    data::write_sequence_split(f, "seq", {inputs, in_len, targets, out_len});
    f.write_all("/cap/", {{"images", images}, {"tgt", tgt}, {"tgt_len", tgt_len}});
    f.commit();
  }
  const io::File f = io::File::open_read(dir.file("all.h5"));

  SECTION("token") {
    const data::TokenSplitRequest request{.src_vocab = kVocab, .tgt_vocab = kVocab, .segments = true};
    const data::TokenSplit memory = data::read_token_split(f, "text", request);
    const data::TokenSplit opened = data::open_token_split(f, "text", request, data::KeepData::file);
    CHECK(!memory.src.in_file());
    CHECK((opened.src.in_file() && opened.tgt.in_file() && opened.segments.in_file()));
    CHECK(opened.src.shape() == Shape{kN, 9});
    CHECK(same_bits(opened.src_len, memory.src_len));
    for (const auto side : {&data::TokenSplit::src, &data::TokenSplit::tgt, &data::TokenSplit::segments}) {
      const Tensor& lengths = side == &data::TokenSplit::tgt ? memory.tgt_len : memory.src_len;
      const data::PaddedBatch a = data::gather_batch(memory.*side, lengths, kIndex);
      const data::PaddedBatch b = data::gather_batch(opened.*side, lengths, kIndex);
      CHECK(same_bits(a.tokens, b.tokens));
    }
    CHECK(data::has_sentence_b(opened.segments, opened.src_len) == data::has_sentence_b(memory.segments, memory.src_len));
    CHECK(same_bits(opened.tgt.all(), tgt));
  }
  SECTION("labelled") {
    const transformer::LabelledSplit memory = transformer::read_labelled_split(f, "cls", kVocab, 3);
    const transformer::LabelledSplit opened = transformer::open_labelled_split(f, "cls", kVocab, 3,
                                                                               data::KeepData::file);
    CHECK((opened.src.in_file() && opened.segments.in_file()));
    const transformer::LabelledSplit a = transformer::gather_labelled(memory, kIndex),
                                     b = transformer::gather_labelled(opened, kIndex);
    CHECK(same_bits(a.src.all(), b.src.all()));
    CHECK(same_bits(a.segments.all(), b.segments.all()));
    CHECK(same_bits(a.label, b.label));
    CHECK(opened.has_pairs());
  }
  SECTION("question answering") {
    const memnet::QaSplit memory = memnet::read_qa_split(f, "qa", kVocab);
    const memnet::QaSplit opened = memnet::open_qa_split(f, "qa", kVocab, data::KeepData::file);
    CHECK((opened.story.in_file() && opened.question.in_file()));
    CHECK(opened.memory_size() == 4);
    const memnet::QaBatch a = memory.gather(kIndex), b = opened.gather(kIndex);
    for (const auto field : {&memnet::QaBatch::story, &memnet::QaBatch::story_len, &memnet::QaBatch::question,
                             &memnet::QaBatch::answer, &memnet::QaBatch::support, &memnet::QaBatch::task})
      CHECK(same_bits(a.*field, b.*field));
  }
  SECTION("sequences") {
    const data::SequenceSplit memory = data::read_sequence_split(f, "seq");
    const data::SequenceSplit opened = data::open_sequence_split(f, "seq", data::KeepData::file);
    CHECK((opened.inputs.in_file() && opened.targets.in_file()));
    CHECK((opened.input_width() == 3 && opened.output_width() == 2));
    const data::SequenceBatch a = memory.gather(kIndex), b = opened.gather(kIndex);
    CHECK(same_bits(a.inputs, b.inputs));
    CHECK(same_bits(a.targets, b.targets));
    CHECK(same_bits(a.target_len, b.target_len));
  }
  SECTION("captions") {
    const caption::CaptionSplit memory = caption::read_caption_split(f, "cap", kVocab);
    const caption::CaptionSplit opened = caption::open_caption_split(f, "cap", kVocab, data::KeepData::file);
    CHECK((opened.images.in_file() && opened.tgt.in_file()));
    CHECK(same_bits(opened.images.gather(kIndex), memory.images.gather(kIndex)));
    CHECK(same_bits(opened.images.range(30, 37), images.rows(30, 37)));
  }
}

TEST_CASE("rows: a split is checked at opening, every row, and the message names the file's row", "[io][rows]") {
  test::TempDir dir;
  Rng rng(3);
  auto [src, src_len] = token_rows(rng, 9);
  const auto [tgt, tgt_len] = token_rows(rng, 6);
  src.idata()[30 * 9] = kVocab;   // row 30 holds an id outside the vocabulary
  {
    io::File f = io::File::create(dir.file("bad.h5"));
    data::write_token_split(f, "train", {.name = "train", .src = src, .src_len = src_len, .tgt = tgt, .tgt_len = tgt_len, .segments = {}});
    f.commit();
  }
  const io::File f = io::File::open_read(dir.file("bad.h5"));
  const data::TokenSplitRequest request{.src_vocab = kVocab, .tgt_vocab = kVocab};
  const std::string want = dir.file("bad.h5") + ": dataset '/train/src' row 30 position 0 holds id 20";
  REQUIRE_THROWS_WITH(data::open_token_split(f, "train", request, data::KeepData::file), Contains(want));
  // A range of rows names the file's row, not its place in the range; rows before it pass.
  REQUIRE_THROWS_WITH(data::read_token_split(f, "train", request, io::RowSet::range(28, 33)), Contains(want));
  const std::vector<int64_t> late = {35, 30};
  REQUIRE_THROWS_WITH(data::read_token_split(f, "train", request, io::RowSet::of(late)), Contains(want));
  CHECK(data::read_token_split(f, "train", request, io::RowSet::range(0, 30)).size() == 30);

  // Kept in memory (asked, or small under auto), the rows are read whole and checked the same way.
  REQUIRE_THROWS_WITH(data::open_token_split(f, "train", request, data::KeepData::automatic), Contains(want));
  CHECK_FALSE(data::keep_in_file(data::KeepData::automatic, 1 << 20));
  CHECK(data::keep_in_file(data::KeepData::automatic, int64_t{1} << 50));
  CHECK_FALSE(data::keep_in_file(data::KeepData::memory, int64_t{1} << 50));
  CHECK(data::keep_in_file(data::KeepData::file, 0));
  CHECK(data::parse_keep_data("file") == data::KeepData::file);
  REQUIRE_THROWS_AS(data::parse_keep_data("disk"), ConfigError);

  // Blocks of rows cover [first, last) in order, each at most `bytes` (at least one row).
  std::vector<std::pair<int64_t, int64_t>> blocks;
  data::for_blocks(0, 10, 4, [&](int64_t b, int64_t e) { blocks.emplace_back(b, e); }, 12);
  CHECK(blocks == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}, {6, 9}, {9, 10}});
  blocks.clear();
  data::for_blocks(0, 2, 100, [&](int64_t b, int64_t e) { blocks.emplace_back(b, e); }, 12);
  CHECK(blocks == std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}});
  blocks.clear();
  data::for_blocks(5, 9, 4, [&](int64_t b, int64_t e) { blocks.emplace_back(b, e); }, 8);
  CHECK(blocks == std::vector<std::pair<int64_t, int64_t>>{{5, 7}, {7, 9}});
}

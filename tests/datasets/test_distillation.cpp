// Sequence-level knowledge distillation (datasets/distillation.hpp): the distilled set holds the
// teacher's outputs + EOS as /train targets, everything else of the original unchanged, and the
// provenance; every input that does not belong is refused naming the file, expected and found.
#include "attn/datasets/distillation.hpp"

#include <algorithm>
#include <vector>

#include "attn/data/batching.hpp"
#include "attn/data/token_data.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/token_run.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using Strings = std::vector<std::string>;
using Ids = std::vector<int32_t>;

namespace {

const char* kDataCommand = "attn-data parallel --src-file de.txt --tgt-file en.txt --out d.h5";

// Target ids of the fixture (lower-cased, min_freq 1): "." 4, "a" 5, "dog" 6, "runs" 7, "man" 8.
datasets::ParallelData parallel_data() {
  datasets::Splits<datasets::TextPairs> text;
  text.train = {{"Ein Hund läuft.", "Ein Mann läuft.", "Ein Hund."}, {"A dog runs.", "A man runs.", "A dog."}};
  text.valid = {{"Ein Kind läuft."}, {"A child runs."}};
  text.test = {{"Ein Hund schläft."}, {"A dog sleeps."}};
  datasets::ParallelConfig cfg;
  cfg.tokenize.lowercase = true;
  cfg.src_vocab.min_freq = cfg.tgt_vocab.min_freq = 1;
  return datasets::build_parallel(text, cfg);
}

// d.h5 as attn-data parallel writes it: root attributes, then the layout.
void write_data(const std::string& path, const datasets::ParallelData& d) {
  io::File f = io::File::create(path);
  io::write_file_info(
      f, {.format = "attnlab/dataset", .kind = "parallel", .created_by = "attn-data test", .command = kDataCommand});
  datasets::write_parallel(f, d);
  f.commit();
}

// A translation output file as attn-transformer translate writes it: `tokens` per row, the sources
// of `sources` as /src, the vocabularies given, root kind `kind`, /config split `split`.
struct TeacherFile {
  std::vector<Ids> tokens;
  data::TokenSplit sources;
  data::Vocab src_vocab, tgt_vocab;
  std::string kind = "translation", split = "train";
  bool records_model = true;
  bool raw = false;   // /predictions written as `tokens` say, unchecked (write_translation decodes them)
};

void write_translation(const std::string& path, const TeacherFile& t) {
  io::File f = io::File::create(path);
  io::write_file_info(f, {.format = "attnlab/output",
                          .kind = t.kind,
                          .created_by = "attn-transformer test",
                          .command = "attn-transformer translate --model teacher.h5 --data d.h5 --split " + t.split +
                                     " --beam 4 --out t.h5"});
  if (t.records_model) f.set_attr("/config", "model", "teacher.h5");
  f.set_attr("/config", "split", t.split);
  f.set_attr("/config", "beam", int64_t{4});
  train::Translation tr;
  tr.tokens = t.tokens;
  tr.scores.assign(t.tokens.size(), -1.0f);
  if (t.raw) {
    const data::PaddedBatch p = data::pad_sequences(t.tokens, /*min_len=*/1);
    f.write("/predictions", p.tokens);
    f.write("/predictions_len", p.lengths);
    f.write("/src", t.sources.src.all());
    f.write("/src_len", t.sources.src_len);
    train::write_vocabs(f, t.src_vocab, t.tgt_vocab);
  } else {
    train::write_translation(f, tr, t.sources, t.src_vocab, t.tgt_vocab);
  }
  f.commit();
}

Ids row(const Tensor& t, int64_t i) { return {t.idata() + i * t.dim(1), t.idata() + (i + 1) * t.dim(1)}; }
Ids ints(const Tensor& t) { return {t.idata(), t.idata() + t.numel()}; }
bool same_ints(const Tensor& a, const Tensor& b) { return a.shape() == b.shape() && ints(a) == ints(b); }

struct Fixture {
  test::TempDir dir;
  std::string data_path = dir.file("d.h5");
  datasets::ParallelData d = parallel_data();
  Fixture() { write_data(data_path, d); }

  // The teacher file of the good case: row 0 differs from the reference, row 1 is empty, row 2 is
  // the reference ("a dog .").
  TeacherFile teacher() const {
    const io::File data = io::File::open_read(data_path);
    return {.tokens = {{6, 7}, {}, {5, 6, 4}},
            .sources = data::read_token_split(data, "train", {}),
            .src_vocab = d.src_vocab,
            .tgt_vocab = d.tgt_vocab};
  }

  // distil(d.h5, the translation file `t` written as t.h5).
  datasets::DistilledData distil(const TeacherFile& t) const {
    write_translation(dir.file("t.h5"), t);
    return datasets::distil(io::File::open_read(data_path), io::File::open_read(dir.file("t.h5")));
  }
};

}  // namespace

TEST_CASE("distil: /train targets are the teacher's outputs + EOS, the rest copied, the provenance recorded",
          "[io][distil]") {
  Fixture fx;
  const datasets::DistilledData distilled = fx.distil(fx.teacher());
  CHECK(distilled.empty_targets == 1);
  const std::string out_path = fx.dir.file("x.h5");
  {
    io::File f = io::File::create(out_path);
    datasets::write_distilled(f, distilled);
    f.commit();
  }
  const io::File out = io::File::open_read(out_path), data = io::File::open_read(fx.data_path);
  // The targets: the teacher's tokens then EOS (2), padded to the longest + 1; the empty output
  // kept as EOS alone, so that row i is still the original's row i.
  const Tensor tgt = out.read("/train/tgt", DType::i32);
  REQUIRE(tgt.shape() == Shape{3, 4});
  CHECK(row(tgt, 0) == Ids{6, 7, 2, 0});
  CHECK(row(tgt, 1) == Ids{2, 0, 0, 0});
  CHECK(row(tgt, 2) == Ids{5, 6, 4, 2});
  CHECK(ints(out.read("/train/tgt_len", DType::i32)) == Ids{3, 1, 4});
  CHECK(row(data.read("/train/tgt", DType::i32), 0) == Ids{5, 6, 7, 4, 2});   // the reference was "a dog runs ."
  // The sources, the other splits and the vocabularies as they were.
  for (const char* name : {"/train/src", "/train/src_len", "/valid/src", "/valid/src_len", "/valid/tgt",
                           "/valid/tgt_len", "/test/src", "/test/src_len", "/test/tgt", "/test/tgt_len"}) {
    INFO(name);
    CHECK(same_ints(out.read(name, DType::i32), data.read(name, DType::i32)));
  }
  for (const char* name :
       {"/valid/src_text", "/valid/tgt_text", "/test/src_text", "/test/tgt_text", "/vocab/src", "/vocab/tgt"}) {
    INFO(name);
    CHECK(out.read_strings(name) == data.read_strings(name));
  }
  CHECK(!out.exists("/train/tgt_text"));
  CHECK(out.attr_int("/vocab", "lowercase") == 1);   // attn-bleu tokenises the references by it
  CHECK(out.attr_string("/vocab", "tokenizer") == datasets::kTokenizerName);
  CHECK(out.attr_int("/test", "lines") == 1);
  CHECK(out.attr_int("/train", "lines") == 3);
  // The provenance.
  CHECK(out.attr_string("/train", "distilled_from") == fx.data_path);
  CHECK(out.attr_string("/train", "distilled_from_command") == kDataCommand);
  CHECK(out.attr_string("/train", "teacher_translations") == fx.dir.file("t.h5"));
  CHECK(out.attr_string("/train", "teacher_model") == "teacher.h5");
  CHECK_THAT(out.attr_string("/train", "teacher_command"), Contains("translate --model teacher.h5"));
  CHECK(out.attr_int("/train", "empty_targets") == 1);
  // The checked reader of the token layout reads every split.
  for (const char* split : {"train", "valid", "test"})
    CHECK_NOTHROW(data::read_token_split(
        out, split, {.src_vocab = distilled.src_vocab.size(), .tgt_vocab = distilled.tgt_vocab.size()}));

  // Distilled again by a teacher whose file names no model: the provenance is the new one only.
  TeacherFile again = fx.teacher();
  again.tokens = {{5}, {5}, {5}};
  again.records_model = false;
  write_translation(fx.dir.file("t2.h5"), again);
  const datasets::DistilledData twice = datasets::distil(io::File::open_read(out_path),
                                                         io::File::open_read(fx.dir.file("t2.h5")));
  const auto& attrs = twice.splits.train.attrs;
  const auto find = [&](const std::string& key) {
    return std::find_if(attrs.begin(), attrs.end(), [&](const auto& kv) { return kv.first == key; });
  };
  CHECK(find("teacher_model") == attrs.end());
  REQUIRE(find("distilled_from") != attrs.end());
  CHECK(std::get<std::string>(find("distilled_from")->second) == out_path);
  CHECK(std::get<int64_t>(find("empty_targets")->second) == 0);
  CHECK(std::count_if(attrs.begin(), attrs.end(), [](const auto& kv) { return kv.first == "distilled_from"; }) == 1);
}

TEST_CASE("distil refuses a translation file that is not the teacher's output for the data set's /train",
          "[io][distil]") {
  Fixture fx;
  const io::File data = io::File::open_read(fx.data_path);
  struct Case {
    std::string what;
    TeacherFile teacher;
    std::string message;
    bool format_error;   // FormatError, else DataError
  };
  std::vector<Case> cases;
  auto with = [&](std::string what, std::string message, bool format_error, auto change) {
    TeacherFile t = fx.teacher();
    change(t);
    cases.push_back({std::move(what), std::move(t), std::move(message), format_error});
  };
  with("another kind of output", "kind is 'bleu', expected 'translation'; distillation reads a translate verb's", true,
       [](TeacherFile& t) { t.kind = "bleu"; });
  with("another split", "t.h5: translates the split 'test' (/config attribute split), expected 'train'", false,
       [](TeacherFile& t) { t.split = "test"; });
  with("fewer rows", "t.h5: dataset '/predictions' has shape [2, 2], expected [3, *]: one row for each of the 3 rows",
       false, [&](TeacherFile& t) {
         t.tokens.pop_back();
         t.sources = data::read_token_split(data, "train", {}, io::RowSet::range(0, 2));
       });
  with("a larger target vocabulary", "dataset '/vocab/tgt' has 10 tokens, expected the 9 of", false,
       [](TeacherFile& t) {
         Strings words = t.tgt_vocab.tokens();
         words.push_back("cat");
         t.tgt_vocab = data::Vocab::from_tokens(words);
       });
  with("another target word", "dataset '/vocab/tgt' holds 'cat' at id 8, expected 'man' as in", false,
       [](TeacherFile& t) {
         Strings words = t.tgt_vocab.tokens();
         words[8] = "cat";
         t.tgt_vocab = data::Vocab::from_tokens(words);
       });
  with("another source vocabulary", "dataset '/vocab/src' holds 'katze'", false, [](TeacherFile& t) {
    Strings words = t.src_vocab.tokens();
    words.back() = "katze";
    t.src_vocab = data::Vocab::from_tokens(words);
  });
  with("the rows in another order", "the source of row 0 ('/src', '/src_len') differs from row 0 of", false,
       [&](TeacherFile& t) {
         const std::vector<int64_t> order = {1, 0, 2};
         t.sources = data::read_token_split(data, "train", {}, io::RowSet::of(order));
       });
  with("EOS emitted", "dataset '/predictions' row 0 position 1 holds id 2, expected a token of '/vocab/tgt' in [3, 9)",
       false, [](TeacherFile& t) {
         t.tokens[0] = {6, 2};
       });
  with("an id beyond the vocabulary", "row 2 position 0 holds id 9", false, [](TeacherFile& t) {
    t.tokens[2] = {9};
    t.raw = true;
  });
  for (const Case& c : cases) {
    INFO(c.what);
    write_translation(fx.dir.file("t.h5"), c.teacher);
    const io::File tr = io::File::open_read(fx.dir.file("t.h5"));
    if (c.format_error)
      CHECK_THROWS_AS(datasets::distil(data, tr), FormatError);
    else
      CHECK_THROWS_AS(datasets::distil(data, tr), DataError);
    CHECK_THROWS_WITH(datasets::distil(data, tr), Contains(c.message));
  }

  // A data set given as the translations, and a data set without a source side.
  CHECK_THROWS_WITH(datasets::distil(data, data), Contains("d.h5: format is 'attnlab/dataset', expected "
                                                           "'attnlab/output'"));
  {
    io::File f = io::File::create(fx.dir.file("lm.h5"));
    data::write_token_split(f, "train", fx.d.splits.train.tokens);
    data::write_vocab(f, "/vocab/tgt", fx.d.tgt_vocab);
    f.commit();
  }
  write_translation(fx.dir.file("t.h5"), fx.teacher());
  CHECK_THROWS_AS(datasets::distil(io::File::open_read(fx.dir.file("lm.h5")), io::File::open_read(fx.dir.file("t.h5"))),
                  FormatError);
  CHECK_THROWS_WITH(
      datasets::distil(io::File::open_read(fx.dir.file("lm.h5")), io::File::open_read(fx.dir.file("t.h5"))),
      Contains("lm.h5: no dataset '/vocab/src': distillation needs a translation data set"));
}

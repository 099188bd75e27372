// Sequence-level knowledge distillation as a user chains it (issue 45): an autoregressive teacher
// translates its training split with beam search, attn-data distil makes the set whose training
// targets are those translations, a cmlm trains on it, translates the test split and attn-bleu
// scores it, through files and through `-`; distil's refusals of inputs that do not belong
// together (exit 3) and of bad usage (exit 2), leaving no file behind; and a distilled set whose
// vocabularies are not the model's refused by translate, eval and train --resume.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;
using Ids = std::vector<int32_t>;

Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command,
                         {{"{data}", "attn-data"}, {"{tf}", "attn-transformer"}, {"{bleu}", "attn-bleu"}});
}

// attn-data reverse writing `out`: `vocab` ids, `n` training rows (20 valid, 20 test), `seed`.
std::string reverse_set(int vocab, int n, int seed, const std::string& out) {
  return "{data} reverse --min-len 2 --max-len 6 --valid-n 20 --test-n 20 --quiet --vocab " + std::to_string(vocab) +
         " --n " + std::to_string(n) + " --seed " + std::to_string(seed) + " --out " + out;
}
// The teacher: trained long enough (100 steps) to get part of the training split right and part
// wrong, so that its outputs and the references differ.
const std::string kTeacher =
    "--d-model 32 --heads 2 --d-ff 64 --layers 1 --dropout 0 --max-tokens 256 --warmup 20 --lr 0.01 --seed 2 "
    "--threads 1 --quiet";
const std::string kTiny =
    "--d-model 16 --heads 2 --d-ff 32 --layers 1 --max-tokens 128 --warmup 4 --lr 0.01 --seed 2 --threads 1 --quiet";

Ids ints(const Tensor& t) { return {t.idata(), t.idata() + t.numel()}; }

// Row i of an int32 [N, L] tensor, its first `len` values.
Ids head(const Tensor& t, int64_t i, int64_t len) { return {t.idata() + i * t.dim(1), t.idata() + i * t.dim(1) + len}; }

// The same int32 dataset in two files: shape and values.
bool same_dataset(const io::File& a, const io::File& b, const std::string& name) {
  const Tensor x = a.read(name, DType::i32), y = b.read(name, DType::i32);
  return x.shape() == y.shape() && ints(x) == ints(y);
}

// The files of `dir` whose name contains `part` (a temporary output left behind).
int files_containing(const test::TempDir& dir, const std::string& part) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    n += e.path().filename().string().find(part) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("distillation: teacher translate --split train --beam 4 -> attn-data distil -> train cmlm -> translate "
          "-> attn-bleu, through files and -",
          "[cli][distil]") {
  test::TempDir dir;
  REQUIRE(run(dir, reverse_set(10, 200, 3, "d.h5")).code == 0);
  const Result teach = run(dir, "{tf} train --data d.h5 --model teacher.h5 --steps 100 " + kTeacher);
  INFO(teach.err);
  REQUIRE(teach.code == 0);
  const Result translated = run(dir, "{tf} translate --model teacher.h5 --data d.h5 --split train --beam 4 --out t.h5 "
                                     "--quiet");
  INFO(translated.err);
  REQUIRE(translated.code == 0);
  CHECK_THAT(translated.out, Contains("200 sentences of train"));

  const Result distil = run(dir, "{data} distil --data d.h5 --translations t.h5 --out x.h5");
  INFO(distil.err);
  REQUIRE(distil.code == 0);
  CHECK_THAT(distil.out, Contains("attn-data distil: wrote x.h5 (train 200 targets from t.h5") &&
                             Contains("; valid 20, test 20 copied from d.h5)"));
  CHECK_THAT(distil.err, Contains("attn-data distil: configuration") && Contains("--translations  t.h5"));
  int64_t empty = 0, as_reference = 0;
  {
    const io::File x = io::File::open_read(dir.file("x.h5")), d = io::File::open_read(dir.file("d.h5")),
                   t = io::File::open_read(dir.file("t.h5"));
    CHECK(x.attr_string("/", "format") == "attnlab/dataset");
    CHECK(x.attr_string("/", "kind") == "distil");
    CHECK(x.attr_string("/config", "translations") == "t.h5");
    // /train's targets are the teacher's predictions, each followed by EOS.
    const Tensor pred = t.read("/predictions", DType::i32), pred_len = t.read("/predictions_len", DType::i32);
    const Tensor tgt = x.read("/train/tgt", DType::i32), tgt_len = x.read("/train/tgt_len", DType::i32);
    const Tensor ref = d.read("/train/tgt", DType::i32), ref_len = d.read("/train/tgt_len", DType::i32);
    REQUIRE(tgt.dim(0) == 200);
    int64_t longest = 0;
    for (int64_t i = 0; i < 200; ++i) {
      const int32_t n = pred_len.idata()[i];
      INFO("row " << i);
      REQUIRE(tgt_len.idata()[i] == n + 1);
      Ids want = head(pred, i, n);
      want.push_back(2);   // EOS
      Ids padded = want;
      padded.resize(static_cast<size_t>(tgt.dim(1)), 0);
      CHECK(head(tgt, i, tgt.dim(1)) == padded);
      longest = std::max<int64_t>(longest, n);
      empty += n == 0;
      as_reference += ref_len.idata()[i] == n + 1 && head(ref, i, n + 1) == want;
    }
    CHECK(tgt.dim(1) == longest + 1);
    // The teacher got some rows right and some wrong: as many right as translate counted.
    CHECK(as_reference == std::llround(t.attr_double("/metrics", "sequence_accuracy") * 200));
    CHECK(as_reference > 0);
    CHECK(as_reference < 200);
    // Sources, the other splits and the vocabularies unchanged.
    for (const char* name : {"/train/src", "/train/src_len", "/valid/src", "/valid/src_len", "/valid/tgt",
                             "/valid/tgt_len", "/test/src", "/test/src_len", "/test/tgt", "/test/tgt_len"}) {
      INFO(name);
      CHECK(same_dataset(x, d, name));
    }
    CHECK(x.read_strings("/vocab/src") == d.read_strings("/vocab/src"));
    CHECK(x.read_strings("/vocab/tgt") == d.read_strings("/vocab/tgt"));
    // The provenance.
    CHECK(x.attr_string("/train", "distilled_from") == "d.h5");
    CHECK_THAT(x.attr_string("/train", "distilled_from_command"), Contains("attn-data reverse --min-len 2"));
    CHECK(x.attr_string("/train", "teacher_translations") == "t.h5");
    CHECK(x.attr_string("/train", "teacher_model") == "teacher.h5");
    CHECK_THAT(x.attr_string("/train", "teacher_command"),
               Contains("attn-transformer translate --model teacher.h5 --data d.h5 --split train --beam 4"));
    CHECK(x.attr_int("/train", "empty_targets") == empty);
  }

  // The student: a cmlm trained on the distilled set, decoding the (original) test split.
  const Result student = run(dir, "{tf} train --arch cmlm --data x.h5 --model nat.h5 --steps 20 " + kTiny);
  INFO(student.err);
  REQUIRE(student.code == 0);
  CHECK(io::File::open_read(dir.file("nat.h5")).attr_string("/trained_on", "data") == "x.h5");
  const Result nat = run(dir,
                         "{tf} translate --model nat.h5 --data x.h5 --split test --iterations 4 --out p.h5 --quiet");
  INFO(nat.err);
  REQUIRE(nat.code == 0);
  CHECK(io::File::open_read(dir.file("p.h5")).shape("/predictions")[0] == 20);
  const Result bleu = run(dir, "{bleu} --hyp p.h5 --ref d.h5 --split test --out b.h5 --quiet");
  INFO(bleu.err);
  REQUIRE(bleu.code == 0);
  CHECK_THAT(bleu.out, Contains("BLEU = "));
  CHECK(io::File::open_read(dir.file("b.h5")).attr_int("/metrics", "sentences") == 20);
  // The distilled set's references are the original's.
  CHECK(run(dir, "{bleu} --hyp p.h5 --ref x.h5 --split test --quiet").out == bleu.out);

  // Through standard streams: the teacher's translation piped into distil gives the same set...
  const Result piped = run(dir, "{tf} translate --model teacher.h5 --data d.h5 --split train --beam 4 --out - --quiet "
                                "| {data} distil --data d.h5 --translations - --out xp.h5 --quiet");
  INFO(piped.err);
  REQUIRE(piped.code == 0);
  {
    const io::File x = io::File::open_read(dir.file("x.h5")), xp = io::File::open_read(dir.file("xp.h5"));
    for (const char* name : {"/train/src", "/train/src_len", "/train/tgt", "/train/tgt_len", "/test/tgt"}) {
      INFO(name);
      CHECK(same_dataset(x, xp, name));
    }
    CHECK(xp.attr_string("/train", "teacher_translations") == "stdin");
    CHECK(xp.attr_string("/train", "teacher_model") == "teacher.h5");   // the piped translation names it too
  }
  // ...and the distilled set piped into training gives the same student, whose translation piped
  // into attn-bleu scores as the file did.
  const std::string distil_to_stdout = "{data} distil --data d.h5 --translations t.h5 --out - --quiet";
  const Result piped_student = run(
      dir, distil_to_stdout + " | {tf} train --arch cmlm --data - --model nat_pipe.h5 --steps 20 " + kTiny);
  INFO(piped_student.err);
  REQUIRE(piped_student.code == 0);
  CHECK(test::same_params(dir.file("nat.h5"), dir.file("nat_pipe.h5")));
  const Result piped_bleu = run(dir, "{tf} translate --model nat_pipe.h5 --data x.h5 --split test --iterations 4 "
                                     "--out - --quiet | {bleu} --hyp - --ref d.h5 --split test --quiet");
  INFO(piped_bleu.err);
  CHECK(piped_bleu.code == 0);
  CHECK(piped_bleu.out == bleu.out);
}

TEST_CASE("attn-data distil refuses inputs that do not belong together (exit 3) and bad usage (exit 2), writing "
          "nothing",
          "[cli][distil]") {
  test::TempDir dir;
  REQUIRE(run(dir, reverse_set(10, 200, 3, "d.h5")).code == 0);
  // Other data sets: larger vocabularies; other sources (another seed); fewer training rows.
  REQUIRE(run(dir, reverse_set(12, 200, 3, "e.h5")).code == 0);
  REQUIRE(run(dir, reverse_set(10, 200, 4, "f.h5")).code == 0);
  REQUIRE(run(dir, reverse_set(10, 150, 3, "g.h5")).code == 0);
  REQUIRE(run(dir, "{tf} train --data d.h5 --model teacher.h5 --steps 2 " + kTiny).code == 0);
  REQUIRE(run(dir, "{tf} train --data e.h5 --model teacher_e.h5 --steps 2 " + kTiny).code == 0);
  const std::string translate = "{tf} translate --beam 4 --quiet ";
  REQUIRE(run(dir, translate + "--model teacher.h5 --data d.h5 --split train --out t.h5").code == 0);
  REQUIRE(run(dir, translate + "--model teacher.h5 --data d.h5 --split test --out t_test.h5").code == 0);
  REQUIRE(run(dir, translate + "--model teacher_e.h5 --data e.h5 --split train --out t_e.h5").code == 0);
  REQUIRE(run(dir, translate + "--model teacher.h5 --data f.h5 --split train --out t_f.h5").code == 0);
  REQUIRE(run(dir, translate + "--model teacher.h5 --data g.h5 --split train --out t_g.h5").code == 0);
  REQUIRE(run(dir, "{bleu} --hyp t_test.h5 --ref d.h5 --split test --out bleu.h5 --quiet").code == 0);

  const std::string distil = "{data} distil --quiet ";
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const Case cases[] = {
      {"--data d.h5 --translations t_test.h5", 3,
       "t_test.h5: translates the split 'test' (/config attribute split), expected 'train'"},
      {"--data d.h5 --translations t_g.h5", 3, "t_g.h5: dataset '/predictions' has shape [150, "},
      {"--data d.h5 --translations t_g.h5", 3,
       "], expected [200, *]: one row for each of the 200 rows of d.h5's '/train'"},
      {"--data d.h5 --translations t_e.h5", 3,
       "t_e.h5: dataset '/vocab/tgt' has 12 tokens, expected the 10 of d.h5's '/vocab/tgt': the teacher decoded with "
       "other vocabularies"},
      {"--data d.h5 --translations t_f.h5", 3,
       "t_f.h5: the source of row 0 ('/src', '/src_len') differs from row 0 of d.h5's '/train/src'"},
      {"--data d.h5 --translations d.h5", 3, "d.h5: format is 'attnlab/dataset', expected 'attnlab/output'"},
      {"--data d.h5 --translations teacher.h5", 3, "teacher.h5: format is 'attnlab/model', expected 'attnlab/output'"},
      {"--data d.h5 --translations bleu.h5", 3, "bleu.h5: kind is 'bleu', expected 'translation'"},
      {"--data t.h5 --translations t.h5", 3, "t.h5: format is 'attnlab/output', expected 'attnlab/dataset'"},
      {"--data d.h5 --translations none.h5", 3, "none.h5: cannot open"},
      {"--data d.h5 --translations t.h5 --out d.h5", 2, " d.h5 is the same file as "},
      {"--data d.h5 --translations t.h5 --out t.h5", 2, " t.h5 is the same file as "},
      {"--data d.h5", 2, "--translations"},
      {"--data - --translations - < d.h5", 2, "--data and --translations cannot both read standard input"},
  };
  for (const Case& c : cases) {
    const std::string args = c.args.find("--out") == std::string::npos ? c.args + " --out x.h5" : c.args;
    const Result r = run(dir, distil + args);
    INFO(args << "\n" << r.err);
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Contains(c.message));
  }
  // No output, not even a temporary one, and the inputs as they were.
  CHECK(!std::filesystem::exists(dir.file("x.h5")));
  CHECK(files_containing(dir, ".tmp.") == 0);
  CHECK(io::File::open_read(dir.file("d.h5")).attr_string("/", "kind") == "reverse");
  CHECK(io::File::open_read(dir.file("t.h5")).attr_string("/", "kind") == "translation");
  // The verb is listed.
  CHECK_THAT(run(dir, "{data} --help").out, Contains("  distil "));
  CHECK_THAT(run(dir, "{data} distil --help").out, Contains("--translations FILE") && Contains("--split train"));
}

TEST_CASE("a distilled set whose vocabularies are not the model's is refused by translate, eval and train --resume "
          "(exit 3)",
          "[cli][distil]") {
  test::TempDir dir;
  REQUIRE(run(dir, reverse_set(10, 200, 3, "d.h5")).code == 0);
  // Another vocabulary of another size (a reverse set over 12 ids)...
  REQUIRE(run(dir, reverse_set(12, 100, 5, "e.h5")).code == 0);
  // ...and one of the same size (10 ids) with other words: six words of parallel text.
  test::write_text(dir.file("a.txt"), "aa bb cc\ndd ee ff\naa cc ee\nbb dd ff\naa bb\ncc dd\nee ff\naa ff\n");
  const std::string parallel = "{data} parallel --src-file a.txt --tgt-file a.txt --min-freq 1 --valid-n 1 --test-n 1";
  REQUIRE(run(dir, parallel + " --quiet --out w.h5").code == 0);
  REQUIRE(io::File::open_read(dir.file("w.h5")).read_strings("/vocab/tgt").size() == 10);
  // Each distilled by its own teacher.
  for (const std::string set : {"d", "e", "w"}) {
    INFO(set);
    const std::string data = set + ".h5", teacher = "teacher_" + set + ".h5";
    REQUIRE(run(dir, "{tf} train --data " + data + " --model " + teacher + " --steps 2 " + kTiny).code == 0);
    REQUIRE(run(dir, "{tf} translate --split train --beam 4 --quiet --out - --model " + teacher + " --data " + data +
                         " | {data} distil --translations - --quiet --data " + data + " --out x_" + data)
                .code == 0);
  }
  REQUIRE(run(dir, "{tf} train --arch cmlm --data x_d.h5 --model nat.h5 --steps 2 " + kTiny).code == 0);
  REQUIRE(run(dir, "{tf} translate --model nat.h5 --data x_d.h5 --out p.h5 --quiet").code == 0);   // its own: fine

  struct Case {
    std::string command, message;
  };
  const Case cases[] = {
      {"{tf} translate --model nat.h5 --data x_e.h5 --out p2.h5 --quiet",
       "x_e.h5: dataset '/vocab/tgt' differs from the model's vocabulary (10 tokens)"},
      {"{tf} translate --model nat.h5 --data x_w.h5 --out p2.h5 --quiet",
       "x_w.h5: dataset '/vocab/tgt' differs from the model's vocabulary (10 tokens)"},
      {"{tf} eval --model nat.h5 --data x_w.h5 --quiet", "x_w.h5: dataset '/vocab/tgt' differs from the model's"},
      {"{tf} train --data x_e.h5 --model nat2.h5 --resume nat.h5 --steps 4 " + kTiny,
       "x_e.h5: the vocabularies (/vocab/src 12, /vocab/tgt 12 tokens) differ from those of nat.h5 (10, 10)"},
      {"{tf} train --data x_e.h5 --model nat2.h5 --resume nat.h5 --allow-new-data --steps 4 " + kTiny,
       "differ from those of nat.h5"},
      {"{tf} train --data x_w.h5 --model nat2.h5 --resume nat.h5 --steps 4 " + kTiny,
       "x_w.h5: its vocabulary differs from nat.h5's '/vocab/src'"},
      {"{tf} train --data x_w.h5 --model nat2.h5 --resume nat.h5 --allow-new-data --steps 4 " + kTiny,
       "x_w.h5: its vocabulary differs from nat.h5's '/vocab/src'"},
  };
  for (const Case& c : cases) {
    const Result r = run(dir, c.command);
    INFO(c.command << "\n" << r.err);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Contains(c.message));
  }
  CHECK(!std::filesystem::exists(dir.file("p2.h5")));
  CHECK(!std::filesystem::exists(dir.file("nat2.h5")));
}

// attn-seq2seq as a user runs it: attn-data reverse -> train -> eval / translate -> attn-bleu
// and attn-plot, through files and through `-` pipes; resumption from the command line; the
// alignment in the output file; exit codes and messages. $ATTN_BIN_DIR is the build's apps
// folder (set by tests/CMakeLists.txt); every file goes to a TempDir. Models are tiny (E 8,
// H 8) and train a few steps.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/plot/heatmap.hpp"
#include "attn/plot/inputs.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

// Runs a shell command line in dir; "{data}", "{s2s}", "{bleu}" and "{plot}" stand for the tools.
Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{s2s}", "attn-seq2seq"},
                                        {"{bleu}", "attn-bleu"}, {"{plot}", "attn-plot"}});
}

const char* kData = "{data} reverse --vocab 10 --min-len 2 --max-len 6 --n 200 --valid-n 20 --test-n 20 --seed 3 --quiet";
const char* kTiny = "--embed-dim 8 --hidden 8 --max-tokens 128 --lr 0.01 --seed 2 --threads 1 --quiet";

// Checks /attention/alignment [N, T, S] of a translation file against its lengths: each row of
// a predicted token sums to `row_sum` over the source length (within 1e-5; a negative row_sum:
// at most 1), and every entry beyond the predicted or source length is exactly 0.
void check_alignment(const std::string& path, double row_sum) {
  const io::File p = io::File::open_read(path);
  const Tensor a = p.read("/attention/alignment");
  const Tensor pred_len = p.read("/predictions_len", DType::i32), src_len = p.read("/src_len", DType::i32);
  REQUIRE(a.rank() == 3);
  const int64_t N = a.dim(0), T = a.dim(1), S = a.dim(2);
  CHECK(N == pred_len.numel());
  CHECK(T == p.shape("/predictions")[1]);   // row t is the weights behind token t of /predictions
  int64_t rows = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t) {
      double sum = 0, outside = 0;
      for (int64_t s = 0; s < S; ++s) {
        const float w = a.at((n * T + t) * S + s);
        CHECK(w >= 0.0f);
        (t < pred_len.idata()[n] && s < src_len.idata()[n] ? sum : outside) += std::fabs(w);
      }
      CHECK(outside == 0.0);
      if (t >= pred_len.idata()[n]) continue;
      ++rows;
      if (row_sum >= 0) CHECK(sum == Approx(row_sum).margin(1e-5));
      else CHECK(sum <= 1.0 + 1e-5);
    }
  CHECK(rows > 0);
}

}  // namespace

TEST_CASE("attn-seq2seq --help lists the verbs, each verb's --help its options and defaults", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  const Result help = run(dir, "{s2s} --help");
  CHECK(help.code == 0);
  for (const char* verb : {"train", "eval", "translate"}) CHECK_THAT(help.out, Contains(std::string("  ") + verb + " "));
  const Result train_help = run(dir, "{s2s} train --help");
  CHECK(train_help.code == 0);
  for (const char* flag : {"--cell gru|lstm (=gru)", "--layers N (=1)", "--bidirectional", "--encoder-self-attention",
                           "--attention none|dot|general|concat|scaled-dot|location (=concat)",
                           "--attention-style bahdanau|luong (=bahdanau)", "--attention-window N (=10)",
                           "--local global|monotonic|predictive (=global)", "--embed-dim N (=128)", "--hidden N (=128)", "--dec-hidden",
                           "--dropout P (=0)", "--teacher-forcing RATIO (=1)", "--max-tokens N (=2048)",
                           "--epochs N (=10)", "--steps N (=0)", "--lr X (=0.001)", "--clip X (=1)",
                           "--checkpoint-every N (=0)", "--keep-checkpoints N (=5)", "--resume", "--seed N (=1)",
                           "--threads N (=0)"})
    CHECK_THAT(train_help.out, Contains(flag));
  const Result tr_help = run(dir, "{s2s} translate --help");
  CHECK(tr_help.code == 0);
  for (const char* flag : {"--beam N (=1)", "--length-penalty ALPHA (=1)", "--max-len N (=0)", "/attention/alignment"})
    CHECK_THAT(tr_help.out, Contains(flag));
}

TEST_CASE("attn-seq2seq: reverse data -> train -> eval, translate -> attn-bleu through files", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, "{s2s} train --data d.h5 --model m.h5 --steps 6 --checkpoint-every 3 " + std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  CHECK_THAT(train.out, Contains("6 steps") && Contains("-> m.h5"));
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/", "format") == "attnlab/model");
    CHECK(m.attr_string("/", "kind") == "seq2seq");
    CHECK(m.attr_int("/state", "step") == 6);
    CHECK(m.attr_int("/config", "hidden") == 8);
    CHECK_FALSE(m.has_attr("/config", "enc_hidden"));   // one name per field: the option's
    CHECK(m.attr_string("/config", "attention") == "concat");
    CHECK(m.attr_int("/config", "max_src_len") == 256);
    CHECK(m.read_strings("/vocab/src").size() == 10);
    CHECK(m.exists("/params/decoder/attention/v"));
    CHECK(m.exists("/optimizer"));
    CHECK(std::filesystem::exists(dir.file("m.step000000003.h5")));
  }

  const Result eval = run(dir, "{s2s} eval --model m.h5 --data d.h5 --split valid --quiet");
  INFO(eval.err);
  CHECK(eval.code == 0);
  CHECK_THAT(eval.out, Contains("attn-seq2seq eval: valid: loss") && Contains("sequence accuracy") &&
                           Contains("20 sentences"));

  const Result tr = run(dir, "{s2s} translate --model m.h5 --data d.h5 --split test --out p.h5 --quiet");
  INFO(tr.err);
  REQUIRE(tr.code == 0);
  CHECK_THAT(tr.out, Contains("20 sentences of test: sequence accuracy"));
  {
    const io::File p = io::File::open_read(dir.file("p.h5"));
    CHECK(p.attr_string("/", "format") == "attnlab/output");
    CHECK(p.attr_string("/", "kind") == "translation");
    CHECK(p.shape("/predictions")[0] == 20);
    CHECK(p.shape("/predictions_len") == Shape{20});
    CHECK(p.read_strings("/predictions_text").size() == 20);
    CHECK(p.read_strings("/predictions_detok").size() == 20);
    CHECK(p.shape("/scores") == Shape{20});
    CHECK(p.shape("/src") == Shape{20, 6});
    CHECK(p.read_strings("/vocab/tgt").size() == 10);
    const Shape a = p.shape("/attention/alignment");
    REQUIRE(a.size() == 3);
    CHECK(a[0] == 20);
    CHECK(a[2] == 6);   // the longest test source (lengths 2..6 among 20 sentences)
    CHECK(p.has_attr("/metrics", "sequence_accuracy"));
  }
  check_alignment(dir.file("p.h5"), 1.0);

  const Result bleu = run(dir, "{bleu} --hyp p.h5 --ref d.h5 --split test --quiet");
  INFO(bleu.err);
  CHECK(bleu.code == 0);
  CHECK_THAT(bleu.out, Contains("BLEU = "));

  const Result beam = run(dir, "{s2s} translate --model m.h5 --data d.h5 --beam 3 --length-penalty 0.5 --max-len 4 "
                               "--out b.h5 --quiet");
  INFO(beam.err);
  REQUIRE(beam.code == 0);
  check_alignment(dir.file("b.h5"), 1.0);
  CHECK(io::File::open_read(dir.file("b.h5")).shape("/predictions")[1] <= 4);
}

TEST_CASE("attn-seq2seq: the same chain through standard streams", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, std::string(kData) + " --out - | {s2s} train --data - --model m.h5 --steps 3 " + kTiny);
  INFO(train.err);
  REQUIRE(train.code == 0);
  const Result chain = run(dir, "{s2s} translate --model m.h5 --data d.h5 --out - --quiet | "
                                "{bleu} --hyp - --ref d.h5 --split test --quiet");
  INFO(chain.err);
  CHECK(chain.code == 0);
  CHECK_THAT(chain.out, Contains("BLEU = "));
}

TEST_CASE("attn-seq2seq train --resume continues to the same bits as an uninterrupted run", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  // Dropout and teacher forcing below 1 draw from the trainer's stream: it must resume too.
  const std::string opts = std::string(kTiny) + " --dropout 0.2 --teacher-forcing 0.5";
  REQUIRE(run(dir, "{s2s} train --data d.h5 --model full.h5 --steps 8 " + opts).code == 0);
  REQUIRE(run(dir, "{s2s} train --data d.h5 --model part.h5 --steps 5 --checkpoint-every 2 " + opts).code == 0);
  CHECK_FALSE(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  const Result resumed = run(dir, "{s2s} train --data d.h5 --model part.h5 --steps 8 --resume " + opts);
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  // From a periodic checkpoint (step 4) as well.
  const Result from_ckpt = run(dir, "{s2s} train --data d.h5 --model again.h5 --steps 8 --resume part.step000000004.h5 " + opts);
  INFO(from_ckpt.err);
  REQUIRE(from_ckpt.code == 0);
  CHECK(test::same_params(dir.file("full.h5"), dir.file("again.h5")));
}

TEST_CASE("attn-seq2seq train --optimizer: each kind trains, resumes to the same bits, and is stored as resolved",
          "[cli][attn-seq2seq]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  for (const std::string optimizer : {"--optimizer rmsprop --lr 0.003", "--optimizer sgd --lr 0.1 --momentum 0.9 "
                                      "--lr-schedule step --lr-decay 0.5 --lr-decay-every 1"}) {
    INFO(optimizer);
    const std::string opts = "--embed-dim 8 --hidden 8 --max-tokens 128 --seed 2 --threads 1 --quiet " + optimizer;
    REQUIRE(run(dir, "{s2s} train --data d.h5 --model full.h5 --steps 9 " + opts).code == 0);
    REQUIRE(run(dir, "{s2s} train --data d.h5 --model part.h5 --steps 4 " + opts).code == 0);
    const Result resumed = run(dir, "{s2s} train --data d.h5 --model part.h5 --steps 9 --resume " + opts);
    INFO(resumed.err);
    REQUIRE(resumed.code == 0);
    CHECK(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  }
  // /config holds the optimizer as resolved: the kind's constants (defaults included) and the
  // schedule's settings, and nothing of the other kinds.
  const io::File m = io::File::open_read(dir.file("full.h5"));
  CHECK(m.attr_string("/config", "optimizer") == "sgd");
  CHECK(m.attr_string("/config", "lr_schedule") == "step");
  CHECK(m.attr_double("/config", "momentum") == 0.9);
  CHECK(m.attr_int("/config", "nesterov") == 0);
  CHECK(m.attr_int("/config", "lr_decay_every") == 1);
  CHECK(m.attr_int("/config", "epochs") == 0);   // --steps alone bounded the run: no epoch limit
  CHECK_FALSE(m.has_attr("/config", "beta1"));
  CHECK_FALSE(m.has_attr("/config", "warmup"));
  CHECK(m.exists("/optimizer/sgd/momentum/output/W"));
  // A flag of another optimizer or schedule is a usage error naming both.
  const Result beta = run(dir, "{s2s} train --data d.h5 --model x.h5 --steps 1 --optimizer sgd --beta1 0.8 " +
                                   std::string(kTiny));
  CHECK(beta.code == 2);
  CHECK_THAT(beta.err, Contains("--beta1 applies to --optimizer adam or adamw, not sgd"));
  const Result warm = run(dir, "{s2s} train --data d.h5 --model x.h5 --steps 1 --warmup 10 " + std::string(kTiny));
  CHECK(warm.code == 2);
  CHECK_THAT(warm.err, Contains("--warmup applies to --lr-schedule inverse-sqrt, not constant"));
  const Result kind = run(dir, "{s2s} train --data d.h5 --model x.h5 --steps 1 --optimizer adagrad " + std::string(kTiny));
  CHECK(kind.code == 2);
  CHECK_THAT(kind.err, Contains("--optimizer must be one of sgd, rmsprop, adam, adamw, got 'adagrad'"));
}

TEST_CASE("attn-seq2seq: every attention variant trains and translates, with its alignment", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  struct Variant {
    std::string options;
    double row_sum;   // < 0: at most 1 (local attention, families/seq2seq/run.hpp)
  };
  const std::vector<Variant> variants = {
      {"--cell lstm --bidirectional --attention dot --attention-style luong", 1.0},
      {"--layers 2 --encoder-self-attention --attention general --attention-window 2 --local monotonic", -1.0},
      {"--attention scaled-dot --local predictive --attention-window 2 --attention-style luong", -1.0},
      {"--attention location --max-src-len 8", 1.0},
  };
  for (const Variant& v : variants) {
    INFO(v.options);
    const Result train = run(dir, "{s2s} train --data d.h5 --model v.h5 --steps 2 " + std::string(kTiny) + " " + v.options);
    INFO(train.err);
    REQUIRE(train.code == 0);
    const Result tr = run(dir, "{s2s} translate --model v.h5 --data d.h5 --out v_pred.h5 --quiet");
    INFO(tr.err);
    REQUIRE(tr.code == 0);
    check_alignment(dir.file("v_pred.h5"), v.row_sum);
  }
  {
    const io::File m = io::File::open_read(dir.file("v.h5"));
    CHECK(m.attr_string("/config", "attention") == "location");
    CHECK(m.attr_int("/config", "max_src_len") == 8);
  }
  // No attention (Cho / Sutskever): predictions but no alignment.
  REQUIRE(run(dir, "{s2s} train --data d.h5 --model none.h5 --steps 2 --attention none " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{s2s} translate --model none.h5 --data d.h5 --out none_pred.h5 --quiet").code == 0);
  const io::File p = io::File::open_read(dir.file("none_pred.h5"));
  CHECK(p.exists("/predictions"));
  CHECK_FALSE(p.exists("/attention"));
}

TEST_CASE("attn-plot heatmap draws a seq2seq alignment with its token labels", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  REQUIRE(run(dir, "{s2s} train --data d.h5 --model m.h5 --steps 10 " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{s2s} translate --model m.h5 --data d.h5 --max-len 5 --out p.h5 --quiet").code == 0);
  const io::File p = io::File::open_read(dir.file("p.h5"));
  const Tensor src = p.read("/src", DType::i32), pred = p.read("/predictions", DType::i32);
  const int64_t S = src.dim(1), L = pred.dim(1);
  // A sentence with predicted words only (a barely trained decoder may emit the id of <pad>,
  // which ends the labels that attn-plot reads).
  const Tensor pred_len = p.read("/predictions_len", DType::i32);
  auto words_only = [&](int64_t i) {
    const int32_t* row = pred.idata() + i * L;
    return pred_len.idata()[i] > 0 && std::all_of(row, row + pred_len.idata()[i], [](int32_t id) { return id >= 4; });
  };
  int64_t n = 0;
  while (n < pred_len.numel() && !words_only(n)) ++n;
  REQUIRE(n < pred_len.numel());
  const Result r = run(dir, "{plot} heatmap p.h5 --dataset /attention/alignment --index " + std::to_string(n) +
                                " --x-ids /src --x-vocab /vocab/src --y-ids /predictions --y-vocab /vocab/tgt"
                                " --out align.png --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  // Exactly the library's picture of alignment[n] cut to the sentence, labelled with its words.
  const std::vector<std::string> src_words = p.read_strings("/vocab/src"), tgt_words = p.read_strings("/vocab/tgt");
  const int32_t src_len = p.read("/src_len", DType::i32).idata()[n];
  plot::HeatmapOptions ho;
  for (int64_t s = 0; s < src_len; ++s) ho.x_labels.push_back(src_words.at(src.idata()[n * S + s]));
  for (int64_t t = 0; t < pred_len.idata()[n]; ++t) ho.y_labels.push_back(tgt_words.at(pred.idata()[n * L + t]));
  const Tensor a = p.read("/attention/alignment");
  const int64_t T = a.dim(1), SA = a.dim(2);
  Tensor m({T, SA});
  std::copy(a.data() + n * T * SA, a.data() + (n + 1) * T * SA, m.data());
  const Tensor cut = plot::crop(m, pred_len.idata()[n], src_len);
  CHECK(test::slurp(dir.file("align.png")) == plot::heatmap(cut, ho).encode(plot::Format::png));
}

TEST_CASE("attn-seq2seq exit codes: usage 2, bad input 3 naming the file and dataset", "[cli][attn-seq2seq]") {
  test::TempDir dir;
  const Result hidden = run(dir, "{s2s} train --data d.h5 --model m.h5 --hidden 0");
  CHECK(hidden.code == 2);
  CHECK_THAT(hidden.err, Contains("--hidden must be > 0, got 0"));
  const Result score = run(dir, "{s2s} train --data d.h5 --model m.h5 --attention bilinear");
  CHECK(score.code == 2);
  CHECK_THAT(score.err, Contains("--attention must be one of none, dot, general, concat, scaled-dot, location"));
  CHECK(run(dir, "{s2s} train --data d.h5").code == 2);   // no --model
  CHECK(run(dir, "{s2s} train --data d.h5 --model m.h5 --teacher-forcing 1.5").code == 2);
  CHECK(run(dir, "{s2s} translate --model m.h5 --data d.h5 --out p.h5 --beam 0").code == 2);
  CHECK(run(dir, "{s2s} decode --model m.h5").code == 2);

  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  // Checked once the data is read: inconsistent model options are usage errors too.
  const Result local = run(dir, "{s2s} train --data d.h5 --model m.h5 --attention-window 3 " + std::string(kTiny));
  CHECK(local.code == 2);
  CHECK_THAT(local.err, Contains("--attention-window applies to --local monotonic or predictive, not global"));
  const Result dot = run(dir, "{s2s} train --data d.h5 --model m.h5 --attention dot --dec-hidden 5 " + std::string(kTiny));
  CHECK(dot.code == 2);
  CHECK_THAT(dot.err, Contains("dot attention needs dec_hidden (5) == the memory width 8"));

  const Result missing = run(dir, "{s2s} train --data none.h5 --model m.h5");
  CHECK(missing.code == 3);
  CHECK_THAT(missing.err, Contains("none.h5"));
  REQUIRE(run(dir, "{data} copy --n 4 --valid-n 2 --test-n 2 --out copy.h5 --quiet").code == 0);
  const Result wrong = run(dir, "{s2s} train --data copy.h5 --model m.h5 --steps 1");
  CHECK(wrong.code == 3);
  CHECK_THAT(wrong.err, Contains("copy.h5"));
  const Result no_model = run(dir, "{s2s} translate --model none.h5 --data d.h5 --out p.h5");
  CHECK(no_model.code == 3);
  CHECK_THAT(no_model.err, Contains("none.h5"));

  // A data set with other vocabularies than the model's.
  REQUIRE(run(dir, "{s2s} train --data d.h5 --model m.h5 --steps 1 " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{data} reverse --vocab 12 --min-len 2 --max-len 6 --n 20 --valid-n 5 --test-n 5 --out other.h5 --quiet")
              .code == 0);
  const Result other = run(dir, "{s2s} translate --model m.h5 --data other.h5 --out p.h5");
  CHECK(other.code == 3);
  CHECK_THAT(other.err, Contains("other.h5") && Contains("/vocab/tgt") && Contains("another data set"));
  const Result resume_other = run(dir, "{s2s} train --data other.h5 --model m.h5 --steps 2 --resume");
  CHECK(resume_other.code == 3);
  CHECK_THAT(resume_other.err, Contains("other.h5") && Contains("m.h5"));
  CHECK_FALSE(std::filesystem::exists(dir.file("p.h5")));
}

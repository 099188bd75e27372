// attn-transformer's non-autoregressive model as a user runs it: attn-data reverse -> train
// --arch cmlm -> eval, translate (mask-predict, /iterations) -> attn-bleu; resumption; and the
// options it refuses (exit 2, the message naming the option).
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command,
                         {{"{data}", "attn-data"}, {"{tf}", "attn-transformer"}, {"{bleu}", "attn-bleu"}});
}

const char* kData =
    "{data} reverse --vocab 10 --min-len 2 --max-len 6 --n 200 --valid-n 20 --test-n 20 --seed 3 --quiet";
const char* kTiny =
    "--d-model 16 --heads 2 --d-ff 32 --layers 1 --max-tokens 128 --warmup 4 --lr 0.01 --seed 2 --threads 1 --quiet";

}  // namespace

TEST_CASE("reverse data -> train --arch cmlm -> eval, translate with /iterations -> attn-bleu", "[cli][nat]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result help = run(dir, "{tf} train --help");
  CHECK_THAT(help.out, Contains("cmlm") && Contains("--length-loss-weight"));
  const Result train = run(dir, "{tf} train --data d.h5 --model m.h5 --arch cmlm --length-loss-weight 0.2 --steps 6 "
                                "--valid-bleu " +
                                    std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/config", "arch") == "cmlm");
    CHECK(m.attr_double("/config", "length_loss_weight") == Approx(0.2));
    CHECK(m.exists("/params/length/W"));
    CHECK(m.exists("/metrics/valid_bleu"));   // mask-predict on /valid after every epoch
  }
  const Result eval = run(dir, "{tf} eval --model m.h5 --data d.h5 --split valid --quiet");
  INFO(eval.err);
  CHECK(eval.code == 0);
  CHECK_THAT(eval.out, Contains("perplexity"));

  const Result tr_help = run(dir, "{tf} translate --help");
  CHECK_THAT(tr_help.out, Contains("--iterations") && Contains("--length-beam") && Contains("/iterations/tokens"));
  const Result tr = run(dir, "{tf} translate --model m.h5 --data d.h5 --split test --iterations 3 --length-beam 2 "
                             "--out p.h5 --quiet");
  INFO(tr.err);
  REQUIRE(tr.code == 0);
  CHECK_THAT(tr.out, Contains("20 sentences of test: sequence accuracy"));
  {
    const io::File p = io::File::open_read(dir.file("p.h5"));
    CHECK(p.attr_string("/", "kind") == "translation");
    const Shape pred = p.shape("/predictions");
    CHECK(pred[0] == 20);
    CHECK(p.shape("/predictions_len") == Shape{20});
    CHECK(p.read_strings("/predictions_text").size() == 20);
    CHECK(p.shape("/scores") == Shape{20});
    const Shape it = p.shape("/iterations/tokens");
    REQUIRE(it.size() == 3);
    CHECK(it[0] == 20);
    CHECK(it[1] == 3);
    CHECK(it[2] == pred[1]);
    CHECK(p.shape("/iterations/masked") == it);
    // The last iteration's output is the prediction.
    const Tensor tokens = p.read("/iterations/tokens"), predictions = p.read("/predictions");
    for (int64_t n = 0; n < 20; ++n)
      for (int64_t t = 0; t < it[2]; ++t)
        CHECK(tokens.idata()[(n * 3 + 2) * it[2] + t] == predictions.idata()[n * pred[1] + t]);
  }
  const Result bleu = run(dir, "{bleu} --hyp p.h5 --ref d.h5 --split test --quiet");
  INFO(bleu.err);
  CHECK(bleu.code == 0);
  CHECK_THAT(bleu.out, Contains("BLEU = "));

  // Resumed, the same bits as the uninterrupted run.
  REQUIRE(run(dir, "{tf} train --data d.h5 --model part.h5 --arch cmlm --length-loss-weight 0.2 --steps 3 " +
                       std::string(kTiny))
              .code == 0);
  const Result resumed = run(dir, "{tf} train --data d.h5 --model part.h5 --steps 6 --resume " + std::string(kTiny));
  INFO(resumed.err);
  CHECK(resumed.code == 0);
  CHECK(test::same_params(dir.file("m.h5"), dir.file("part.h5")));
}

TEST_CASE("attn-transformer refuses NAT options it cannot honour: exit 2 naming the option", "[cli][nat]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  REQUIRE(run(dir, "{tf} train --data d.h5 --model nat.h5 --arch cmlm --steps 2 " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{tf} train --data d.h5 --model at.h5 --steps 2 " + std::string(kTiny)).code == 0);
  const std::string translate = "{tf} translate --data d.h5 --out p.h5 --quiet --model ";
  struct Case {
    std::string command, message;
  };
  const Case cases[] = {
      {translate + "nat.h5 --iterations 0", "--iterations must be > 0, got 0"},
      {translate + "nat.h5 --length-beam 1000000", "--length-beam must be in [1, 257]"},
      {translate + "nat.h5 --beam 4", "use --length-beam"},
      {translate + "at.h5 --iterations 4", "--iterations and --length-beam need a non-autoregressive model"},
      {"{tf} generate --model nat.h5", "generate needs a language model"},
      {"{tf} train --data d.h5 --model x.h5 --length-loss-weight 0.5 --steps 1 " + std::string(kTiny),
       "--length-loss-weight needs a cmlm model"},
      {"{tf} train --data d.h5 --model x.h5 --arch cmlm --length-loss-weight -1 --steps 1 " + std::string(kTiny),
       "--length-loss-weight"},
      {"{tf} train --data d.h5 --model x.h5 --target-masking all --steps 1 " + std::string(kTiny),
       "--target-masking needs a non-autoregressive model (--arch cmlm), this model is 'encdec'"},
      {"{tf} train --data d.h5 --model x.h5 --arch cmlm --target-masking most --steps 1 " + std::string(kTiny),
       "--target-masking"},
      {"{tf} train --data d.h5 --model x.h5 --length-rule eos --steps 1 " + std::string(kTiny),
       "--length-rule needs a non-autoregressive model (--arch cmlm), this model is 'encdec'"},
      {"{tf} train --data d.h5 --model x.h5 --arch cmlm --eos-margin 4 --steps 1 " + std::string(kTiny),
       "--eos-margin needs the cut at </s>"},
      {"{tf} train --data d.h5 --model x.h5 --decoder-inputs copy --steps 1 " + std::string(kTiny),
       "--decoder-inputs needs a non-autoregressive model (--arch cmlm), this model is 'encdec'"},
      {"{tf} train --data d.h5 --model x.h5 --arch cmlm --decoder-inputs source --steps 1 " + std::string(kTiny),
       "--decoder-inputs"},
      {"{tf} train --data d.h5 --model x.h5 --arch cmlm --glancing-ratio 0.3 --steps 1 " + std::string(kTiny),
       "--glancing-ratio needs glancing training"},
      {"{tf} train --data d.h5 --model x.h5 --arch cmlm --target-masking glancing --glancing-ratio 2 --steps 1 " +
           std::string(kTiny),
       "--glancing-ratio"},
  };
  for (const Case& c : cases) {
    const Result r = run(dir, c.command);
    INFO(c.command << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains(c.message));
  }
  CHECK_THAT(run(dir, translate + "nat.h5 --length-beam 1000000").err, Contains("got 1000000"));
}

TEST_CASE("one-pass NAT: train --target-masking glancing --decoder-inputs copy -> translate in one pass, with "
          "--dump-attention",
          "[cli][nat]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, "{tf} train --data d.h5 --model g.h5 --arch cmlm --target-masking glancing "
                                "--glancing-ratio 0.3 --decoder-inputs copy --steps 4 " +
                                    std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  {
    const io::File m = io::File::open_read(dir.file("g.h5"));
    CHECK(m.attr_string("/config", "target_masking") == "glancing");
    CHECK(m.attr_double("/config", "glancing_ratio") == Approx(0.3));
    CHECK(m.attr_string("/config", "decoder_inputs") == "copy");
  }
  // The model's default: one pass (no --iterations), with every layer's weights.
  const Result tr = run(dir,
                        "{tf} translate --model g.h5 --data d.h5 --split test --dump-attention --out p.h5 --quiet");
  INFO(tr.err);
  REQUIRE(tr.code == 0);
  const io::File p = io::File::open_read(dir.file("p.h5"));
  const Shape pred = p.shape("/predictions");
  CHECK(p.shape("/iterations/tokens") == Shape{20, 1, pred[1]});
  const Shape self = p.shape("/attention/self/layer0"), cross = p.shape("/attention/cross/layer0");
  REQUIRE(self.size() == 4);
  CHECK(self == Shape{20, 2, pred[1], pred[1]});
  REQUIRE(cross.size() == 4);
  CHECK(Shape(cross.begin(), cross.begin() + 3) == Shape{20, 2, pred[1]});   // then the sources' width
}

TEST_CASE("cut at </s>: train --length-rule eos -> translate, one length per sentence", "[cli][nat]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, "{tf} train --data d.h5 --model e.h5 --arch cmlm --target-masking all "
                                "--length-rule eos --eos-margin 3 --steps 4 " +
                                    std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  {
    const io::File m = io::File::open_read(dir.file("e.h5"));
    CHECK(m.attr_string("/config", "length_rule") == "eos");
    CHECK(m.attr_int("/config", "eos_margin") == 3);
  }
  const Result tr = run(dir, "{tf} translate --model e.h5 --data d.h5 --split test --out p.h5 --quiet");
  INFO(tr.err);
  REQUIRE(tr.code == 0);
  {   // every source has at most 6 tokens: the decoder fills at most 6 + 3 positions, EOS included
    const io::File p = io::File::open_read(dir.file("p.h5"));
    const Shape it = p.shape("/iterations/tokens");
    CHECK(it[1] == 1);
    CHECK(it[2] <= 9);
    CHECK(p.shape("/predictions")[1] <= it[2]);
  }
  const Result beam = run(dir, "{tf} translate --model e.h5 --data d.h5 --split test --length-beam 2 --out q.h5");
  CHECK(beam.code == 2);
  CHECK_THAT(beam.err, Contains("cuts its output at </s>"));
}

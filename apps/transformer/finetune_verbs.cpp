// attn-transformer finetune | classify, and eval of a fine-tuned model: the second stage of GPT
// and BERT on a labelled data set (attn/families/transformer/classifier_run.hpp, trainer.hpp).
#include <cstdio>
#include <memory>
#include <optional>

#include "attn/data/splits.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::transformer_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

std::string fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

void add_finetune_options(cli::Options& opts) {
  // clang-format off
  opts.add()
      ("init", po::value<std::string>()->value_name("FILE"),
       "the pre-trained model, HDF5 (attn-transformer train --arch lm or mlm on a set with the same vocabulary); "
       "not with --resume")
      ("freeze-encoder", po::bool_switch(), "train the classification head only; the pre-trained weights stay as they are")
      ("aux-lm", po::value<double>()->value_name("LAMBDA")->default_value(0.0, "0")
                     ->notifier(cli::at_least<double>("aux-lm", 0.0)),
       "GPT's auxiliary objective L = L_cls + LAMBDA L_lm (Radford et al. 2018 use 0.5; --arch lm bodies only)")
      ("from-scratch", po::bool_switch(),
       "the baseline without pre-training: --init's architecture, every weight drawn afresh from --seed");
  // clang-format on
}

struct FineTuneRun : cli::TrainRun {
  transformer::LabelledData data;
  std::optional<transformer::TransformerClassifier> model;
};

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  opts.refuse_together("freeze-encoder", "from-scratch",
                       "a body trained from scratch must train; --freeze-encoder would leave it random");
  auto run = std::make_unique<FineTuneRun>();
  run->data = transformer::read_labelled_data(in.data, in.keep_data);
  const auto classes = static_cast<int64_t>(run->data.labels.size());
  const auto aux_lm = static_cast<float>(opts.get<double>("aux-lm"));
  if (in.resume.empty()) {
    if (!opts.has("init")) throw ConfigError("finetune needs --init PRETRAINED.h5 (or --resume)");
    const std::string init = opts.get<std::string>("init");
    transformer::TransformerFile pre = transformer::load_pretrained(init, in.data, run->data);
    if (opts.get<bool>("from-scratch"))
      run->model.emplace(transformer::ClassifierConfig{pre.model.config(), classes, aux_lm}, in.init_rng);
    else
      run->model.emplace(std::move(pre.model), classes, aux_lm, in.init_rng);
  } else {
    const transformer::ClassifierConfig c = transformer::ClassifierConfig::from_attrs(
        in.resumed_config(transformer::kClassifierKind), in.resume);
    if (c.classes != classes || c.body.tgt_vocab != run->data.vocab.size())
      throw DataError(in.resume + ": a classifier of " + std::to_string(c.classes) + " classes over " +
                      std::to_string(c.body.tgt_vocab) + " tokens, but " + in.data.display_name() + " has " +
                      std::to_string(classes) + " classes and " + std::to_string(run->data.vocab.size()) + " tokens");
    run->model.emplace(c, in.init_rng);
  }
  run->task = transformer::classifier_task(*run->model, run->data.train, run->data.valid_or_null(), run->data.vocab,
                                           run->data.labels, opts.get<bool>("freeze-encoder"));
  run->model_width = run->model->config().body.d_model;
  return run;
}

// test_error of a fine-tuned model on the data set's test split, for --repeats (none without one).
std::vector<std::pair<std::string, double>> test_scores(const std::string& model, const io::File& data) {
  if (!data::has_split(data, "test")) return {};
  const transformer::ClassifierFile m = transformer::load_classifier(model);
  const transformer::LabelledSplit test = transformer::read_classifier_split(data, "test", m, model);
  const train::BatchStats s = transformer::evaluate_classifier(m.model, test, 64);
  return {{"test_error", 1.0 - s.sum(1) / s.count}};
}

}  // namespace

int cmd_finetune(int argc, char** argv) {
  // clang-format off
  return cli::run_train_verb(kTool, argc, argv, {
      .synopsis = "--init PRETRAINED.h5 --data LABELLED.h5 --model OUT.h5 [options]",
      .about = "Fine-tunes a pre-trained Transformer as a classifier (Radford et al. 2018; Devlin et al. 2019): a\n"
               "linear layer and softmax over the classes on the final hidden state of the last token (lm) or\n"
               "of [CLS] (mlm), trained with the body (or alone: --freeze-encoder) on /train of a labelled data\n"
               "set (attn-data babi-cls, pairs; datasets/README.md), validated every epoch on /valid when present.",
      .data_help = "labelled data set, HDF5 (attn-data babi-cls, pairs); its /vocab/src must be the pre-trained model's",
      .batching = {.batch_size = 32, .max_tokens_option = true},
      .epochs = 3,
      .optimizer = {.lr = 1e-4},
      .add_options = add_finetune_options,
      .prepare = prepare,
      .repeats_metric = "error",
      .test_scores = test_scores,
  });
  // clang-format on
}

namespace {

// --model, --data, --split, --batch-size, --threads.
void add_classify_options(cli::Options& opts) {
  opts.model("fine-tuned model, HDF5 (attn-transformer finetune)").data("labelled data set, HDF5").split("test");
  opts.batch_size(64).threads();
}

}  // namespace

int eval_classifier(const cli::Options& opts) {
  const std::string path = opts.get<std::string>("model");
  const transformer::ClassifierFile m = transformer::load_classifier(path);
  const io::File data = io::open_dataset(opts.get<std::string>("data"));
  const transformer::LabelledSplit s = transformer::read_classifier_split(data, opts.get<std::string>("split"), m,
                                                                          path);
  const train::BatchStats r = transformer::evaluate_classifier(m.model, s, opts.get<int64_t>("batch-size"));
  cli::print_summary(opts, opts.tool() + " eval: " + s.name + ": loss " + fixed(r.loss()) + ", accuracy " +
                               fixed(r.sum(1) / r.count) + ", error " + fixed(1.0 - r.sum(1) / r.count) + " (" +
                               std::to_string(s.size()) + " examples)");
  return 0;
}

int cmd_classify(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE --out FILE [options]",
                    "Classifies the examples of one split with a fine-tuned model and writes the predicted classes\n"
                    "(/predictions), the class probabilities (/probabilities [N, K]) and the references (/label),\n"
                    "with --dump-attention also every layer's self-attention /attention/layer<i> [N, H, L, L]\n"
                    "(docs/FORMATS.md).");
  add_classify_options(opts);
  opts.out("predictions, HDF5");
  opts.add()("dump-attention", po::bool_switch(), "store the self-attention weights of every layer and head");
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const std::string path = opts.get<std::string>("model");
  const transformer::ClassifierFile m = transformer::load_classifier(path);
  const io::File data = io::open_dataset(opts.get<std::string>("data"));
  const transformer::LabelledSplit s = transformer::read_classifier_split(data, opts.get<std::string>("split"), m,
                                                                          path);
  const transformer::Classification c = transformer::classify(m.model, s, opts.get<int64_t>("batch-size"),
                                                              opts.get<bool>("dump-attention"));
  cli::write_output(opts, "attnlab/output", "classification",
                    [&](io::File& f) { transformer::write_classification(f, c, s, m.vocab, m.labels); });
  cli::print_summary(opts, opts.tool() + " classify: " + std::to_string(s.size()) + " examples of " + s.name +
                               ": accuracy " + fixed(c.stats.sum(1) / c.stats.count) + ", loss " +
                               fixed(c.stats.loss()) + " -> " + opts.get<std::string>("out"));
  return 0;
}

}  // namespace attn::transformer_tool

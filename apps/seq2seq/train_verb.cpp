// attn-seq2seq train: options -> seq2seq::Seq2SeqConfig and train::TrainConfig, then train::fit
// over the token data set (attn/train/trainer.hpp, seq2seq_run.hpp).
#include <algorithm>
#include <memory>

#include "attn/families/seq2seq/run.hpp"
#include "common/decoding.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::seq2seq_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;
using nn::ScoreKind;

void add_model_options(cli::Options& opts) {
  // clang-format off
  opts.add_model()
      ("cell", cli::choice("cell", "gru", {"gru", "lstm"}),
       "recurrent cell of the encoder and the decoder")
      ("embed-dim", int_value(128)->notifier(cli::positive<int64_t>("embed-dim")),
       "embedding width E (source and target)")
      ("hidden", int_value(128)->notifier(cli::positive<int64_t>("hidden")), "encoder state width H per direction")
      ("dec-hidden", po::value<int64_t>()->value_name("N")->notifier(cli::positive<int64_t>("dec-hidden")),
       "decoder state width (default: --hidden; with dot and scaled-dot scores the memory width, "
       "H or 2H bidirectional, as those scores need)")
      ("layers", int_value(1)->notifier(cli::positive<int64_t>("layers")), "encoder layers")
      ("bidirectional", po::bool_switch(), "bidirectional encoder: h_i = [h->_i; h<-_i] (Bahdanau et al.)")
      ("encoder-self-attention", po::bool_switch(),
       "intra-attention over the encoder's own earlier states at every step (LSTMN, Cheng et al. 2016)")
      ("attention", cli::choice("attention", "concat", {"none", "dot", "general", "concat", "scaled-dot", "location"}),
       "alignment score (Luong et al. names; concat is Bahdanau's additive v^T tanh(W s + U h)); none: "
       "no attention, the decoder sees the final encoder state only (Cho, Sutskever)")
      ("attention-style", cli::choice("attention-style", "bahdanau", {"bahdanau", "luong"}),
       "bahdanau: attend with s_{t-1}, context into the RNN input; luong: attend with s_t, "
       "attentional state tanh(W_c [c; s_t]) fed to the next step")
      ("attention-dim", int_value(0)->notifier(cli::at_least<int64_t>("attention-dim", 0)),
       "width of the concat score and of local-p's position network (0: the decoder width)")
      ("local", cli::choice("local", "global", {"global", "monotonic", "predictive"}),
       "global attention over the whole source, or local attention (Luong et al. sec. 3.2) over "
       "[p_t - D, p_t + D]: monotonic (local-m, p_t = t) or predictive (local-p, learnt p_t and a "
       "Gaussian of sigma D/2)")
      ("attention-window", int_value(10)->notifier(cli::positive<int64_t>("attention-window")),
       "the window radius D of local attention")
      ("max-src-len", int_value(0)->notifier(cli::at_least<int64_t>("max-src-len", 0)),
       "longest source the location score handles (0: the longest of the data, at least 256)")
      ("dropout", po::value<double>()->value_name("P")->default_value(0.0, "0")
                      ->notifier(cli::in_range<double>("dropout", 0.0, 0.99)),
       "dropout between encoder layers and on the output layer's input")
      ("teacher-forcing", po::value<double>()->value_name("RATIO")->default_value(1.0, "1")
                              ->notifier(cli::in_range<double>("teacher-forcing", 0.0, 1.0)),
       "probability of feeding the gold previous token in training (else the model's own argmax)")
      ("label-smoothing", po::value<double>()->value_name("EPS")->default_value(0.0, "0")
                              ->notifier(cli::in_range<double>("label-smoothing", 0.0, 0.99)),
       "label smoothing of the loss");
  // clang-format on
  cli::add_valid_bleu_option(opts);
}

seq2seq::Seq2SeqConfig config_from_options(const cli::Options& opts, const train::Vocabs& vocabs) {
  seq2seq::Seq2SeqConfig c;
  c.src_vocab = vocabs.src.size();
  c.tgt_vocab = vocabs.tgt.size();
  c.embed_dim = opts.get<int64_t>("embed-dim");
  c.cell = nn::parse_rnn_cell(opts.get<std::string>("cell"));
  c.hidden = opts.get<int64_t>("hidden");
  c.layers = opts.get<int64_t>("layers");
  c.bidirectional = opts.get<bool>("bidirectional");
  c.encoder_self_attention = opts.get<bool>("encoder-self-attention");
  c.attention = nn::parse_score_kind(opts.get<std::string>("attention"));
  const bool dot = c.attention == nn::ScoreKind::dot || c.attention == nn::ScoreKind::scaled_dot;
  c.dec_hidden = opts.has("dec-hidden") ? opts.get<int64_t>("dec-hidden") : dot ? c.memory_dim() : c.hidden;
  c.attention_style = seq2seq::parse_attention_style(opts.get<std::string>("attention-style"));
  const int64_t attention_dim = opts.get<int64_t>("attention-dim");
  c.attention_dim = attention_dim > 0 ? attention_dim : c.dec_hidden;
  c.local = seq2seq::parse_local_attention(opts.get<std::string>("local"));
  c.attention_window = opts.get<int64_t>("attention-window");
  if (c.local == seq2seq::LocalAttention::global && cli::given(opts, "attention-window"))
    throw ConfigError("--attention-window applies to --local monotonic or predictive, not global");
  c.dropout = static_cast<float>(opts.get<double>("dropout"));
  c.teacher_forcing = static_cast<float>(opts.get<double>("teacher-forcing"));
  c.label_smoothing = static_cast<float>(opts.get<double>("label-smoothing"));
  return c;
}

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  auto run = std::make_unique<cli::TokenTrainRun<seq2seq::Seq2Seq>>();
  run->vocabs = train::read_data_vocabs(in.data);
  seq2seq::Seq2SeqConfig config = in.resume.empty()
                                      ? config_from_options(opts, run->vocabs)
                                      : seq2seq::Seq2SeqConfig::from_attrs(
                                            train::resumed_config(in.resume, "seq2seq", in.data, run->vocabs),
                                            in.resume);
  run->splits = train::read_training_data(in.data, seq2seq::seq2seq_request(config), in.keep_data);
  if (in.resume.empty()) {
    const int64_t max_src = opts.get<int64_t>("max-src-len");
    config.max_src_len = max_src > 0 ? max_src : std::max<int64_t>(256, seq2seq::longest_source(run->splits));
  }
  run->model.emplace(config, in.init_rng);
  run->task = seq2seq::seq2seq_task(*run->model, run->splits.train, run->splits.valid_or_null(), run->vocabs.src,
                                    run->vocabs.tgt);
  cli::add_valid_bleu(opts, run->task, run->splits.valid_or_null(),
                      [m = &*run->model](const data::TokenSplit& s) { return seq2seq::translate(*m, s, {}); });
  return run;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  // clang-format off
  return cli::run_train_verb(kTool, argc, argv, {
      .about = "Trains an RNN encoder-decoder with attention with Adam at a constant rate and gradient clipping,\n"
               "in batches of about --max-tokens tokens of similar lengths, teacher-forced with probability\n"
               "--teacher-forcing; validates every epoch on /valid when present.",
      .data_help = "token data set, HDF5 (attn-data reverse, sort, multi30k, parallel)",
      .batching = {.max_tokens = 2048},
      .optimizer = {.adam = {.lr = 0.0f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f}},
      .clip_norm = 1.0,
      .add_options = add_model_options,
      .prepare = prepare,
  });
  // clang-format on
}

}  // namespace attn::seq2seq_tool

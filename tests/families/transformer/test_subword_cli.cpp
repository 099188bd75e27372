// Subword units from the shell (issue 46): attn-data subword -> parallel --subword-model ->
// attn-transformer train -> translate -> attn-bleu; the SentencePiece model travels with the data
// set, the trained model and the translations, and bad models are refused naming the file.
#include <filesystem>
#include <fstream>
#include <string>

#include "attn/data/subword.hpp"
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

// 60 German-English sentence pairs of a small world, word for word.
void write_corpus(const test::TempDir& dir) {
  const char* de_who[] = {"Ein Hund", "Eine Katze", "Zwei Kinder", "Ein Mann", "Eine Frau", "Einige Leute"};
  const char* en_who[] = {"A dog", "A cat", "Two children", "A man", "A woman", "Some people"};
  const char* de_what[] = {"rennt über die Wiese.",    "schläft auf dem Sofa.",
                           "spielt im Schnee.",        "geht die Straße entlang.",
                           "springt über einen Zaun.", "schaut in die Kamera.",
                           "isst einen Apfel.",        "wartet auf den Bus.",
                           "sitzt auf einer Bank.",    "lacht laut."};
  const char* en_what[] = {"runs across the meadow.", "sleeps on the sofa.", "plays in the snow.",
                           "walks down the street.",  "jumps over a fence.", "looks into the camera.",
                           "eats an apple.",          "waits for the bus.",  "sits on a bench.",
                           "laughs loudly."};
  std::ofstream de(dir.file("train.de")), en(dir.file("train.en"));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 10; ++j) {
      de << de_who[i] << " " << de_what[j] << "\n";
      en << en_who[i] << " " << en_what[j] << "\n";
    }
}

}  // namespace

TEST_CASE("subwords from the shell: a joint BPE model -> parallel -> train -> translate -> attn-bleu",
          "[cli][subword]") {
  test::TempDir dir;
  write_corpus(dir);
  const Result model = run(dir, "{data} subword --text train.de train.en --vocab-size 120 --out joint.model --quiet");
  INFO(model.err);
  REQUIRE(model.code == 0);
  const Result data = run(dir, "{data} parallel --src-file train.de --tgt-file train.en --valid-n 6 --test-n 6 "
                               "--subword-model joint.model --out d.h5 --quiet");
  INFO(data.err);
  REQUIRE(data.code == 0);
  const data::SubwordModel sp = data::SubwordModel::load(dir.file("joint.model"));
  {
    const io::File d = io::File::open_read(dir.file("d.h5"));
    CHECK(d.attr_string("/vocab", "tokenizer") == "sentencepiece");
    CHECK(d.read_strings("/vocab/tgt") == sp.pieces());
    const data::Vocab tgt = data::read_vocab(d, "/vocab/tgt");
    REQUIRE(tgt.subword() != nullptr);
    CHECK(tgt.subword()->bytes() == sp.bytes());
    // The last test line's target ids are its pieces' ids, then EOS.
    const std::vector<std::string> pieces = sp.encode("Some people laughs loudly.");
    const Tensor ids = d.read("/test/tgt");
    const int64_t row = 5, T = ids.dim(1);
    for (size_t t = 0; t < pieces.size(); ++t)
      CHECK(ids.idata()[row * T + static_cast<int64_t>(t)] == tgt.id(pieces[t]));
    CHECK(ids.idata()[row * T + static_cast<int64_t>(pieces.size())] == data::kEos);
  }
  const Result train = run(dir, "{tf} train --data d.h5 --model m.h5 --steps 30 --d-model 32 --heads 2 --d-ff 64 "
                                "--layers 1 --max-tokens 256 --warmup 5 --lr 0.01 --threads 1 --quiet");
  INFO(train.err);
  REQUIRE(train.code == 0);
  CHECK(io::File::open_read(dir.file("m.h5")).exists("/vocab/tgt_subword"));   // the model carries it on
  const Result tr = run(dir, "{tf} translate --model m.h5 --data d.h5 --split test --out - --quiet "
                             "| {bleu} --hyp - --ref d.h5 --split test --quiet");
  INFO(tr.err);
  CHECK(tr.code == 0);
  CHECK_THAT(tr.out, Contains("BLEU = "));
  REQUIRE(run(dir, "{tf} translate --model m.h5 --data d.h5 --split test --out p.h5 --quiet").code == 0);
  const io::File p = io::File::open_read(dir.file("p.h5"));
  const std::vector<std::string> detok = p.read_strings("/predictions_detok");
  for (const std::string& s : detok) CHECK(s.find("\xE2\x96\x81") == std::string::npos);   // no "▁" left
}

TEST_CASE("subwords from the shell: bad models and contradicting options are refused naming them", "[cli][subword]") {
  test::TempDir dir;
  write_corpus(dir);
  REQUIRE(run(dir, "{data} subword --text train.en --vocab-size 80 --out en.model --quiet").code == 0);
  {
    std::ofstream bad(dir.file("bad.model"));
    bad << "not a sentencepiece model";
  }
  const std::string parallel = "{data} parallel --src-file train.de --tgt-file train.en --valid-n 6 --out x.h5 ";
  struct Case {
    std::string args, message;
    int code;
  };
  const Case cases[] = {
      {parallel + "--subword-model bad.model", "bad.model: not a SentencePiece model", 3},
      {parallel + "--subword-model missing.model", "missing.model", 3},
      {parallel + "--src-subword-model en.model", "give both --src-subword-model and --tgt-subword-model", 2},
      {parallel + "--subword-model en.model --tgt-subword-model en.model", "--subword-model", 2},
      {parallel + "--subword-model en.model --min-freq 3", "--min-freq builds a word vocabulary", 2},
  };
  for (const Case& c : cases) {
    const Result r = run(dir, c.args);
    INFO(c.args << "\n" << r.err);
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Contains(c.message));
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("x.h5")));
}

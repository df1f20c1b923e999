// The tokenizer against Hugging Face's own outputs: llama.cpp's reference vectors for
// Llama-2 (SentencePiece BPE), Llama-3 and Qwen3 (byte-level BPE), and stories260K.
#include "tokenizer/tokenizer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct reference_case {
  std::string text;
  std::vector<int32_t> ids;
};

// NAME.inp holds texts each followed by "\n__ggml_vocab_test__\n"; line i of NAME.out holds
// the ids of text i.
std::vector<reference_case> load_reference(const std::string& name) {
  fs::path dir = testing::shared_dir() / "tokenizers" / "reference";
  std::string inp = read_file(dir / (name + ".inp"));
  std::string out = read_file(dir / (name + ".out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<reference_case> cases;
  for (size_t pos = 0; pos < inp.size();) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (size_t i = 0; i < cases.size() && std::getline(lines, line); ++i) {
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) cases[i].ids.push_back(id);
  }
  return cases;
}

void check_reference(const std::string& tokenizer_name, const std::string& reference) {
  auto tok = tokenizer::load(testing::shared_dir() / "tokenizers" / tokenizer_name);
  auto cases = load_reference(reference);
  ASSERT_EQ(cases.size(), 46u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    EXPECT_EQ(tok.encode(c.text, false), c.ids) << "case " << i << ": '" << c.text << "'";
    EXPECT_EQ(tok.decode(c.ids, false), c.text) << "case " << i;
  }
}

TEST(tokenizer, llama2_matches_hugging_face) {
  check_reference("llama2", "llama-spm");
}
TEST(tokenizer, llama3_matches_hugging_face) {
  check_reference("llama3", "llama-bpe");
}
TEST(tokenizer, qwen3_matches_hugging_face) {
  check_reference("qwen3", "qwen2");
}

TEST(tokenizer, stories260k_round_trips_golden_text) {
  auto tok = tokenizer::load(testing::stories260k_dir());
  auto golden = nlohmann::json::parse(read_file(testing::stories260k_dir() / "golden_greedy.json"));
  std::vector<int32_t> ids = golden["output_token_ids"];
  std::string text = golden["output_text"];
  EXPECT_EQ(tok.decode(ids, true), text);
  // The golden ids come from greedy sampling, which need not be the BPE-optimal split, so
  // encoding is checked on the text, through a round trip.
  EXPECT_EQ(tok.decode(tok.encode(text, false), false), text);
  std::vector<int32_t> with_bos = {1};
  with_bos.insert(with_bos.end(), ids.begin(), ids.end());
  EXPECT_EQ(tok.decode(with_bos, true), text);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.vocab_size(), 512u);
}

TEST(tokenizer, special_tokens_added_and_skipped) {
  auto llama2 = tokenizer::load(testing::shared_dir() / "tokenizers" / "llama2");
  auto ids = llama2.encode("Hello world", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(llama2.decode(ids, true), "Hello world");
  EXPECT_EQ(llama2.decode(ids, false), "<s> Hello world");
  EXPECT_TRUE(llama2.is_special(1));
  EXPECT_FALSE(llama2.is_special(100));

  auto qwen = tokenizer::load(testing::shared_dir() / "tokenizers" / "qwen3");
  auto q = qwen.encode("<|im_start|>user\nhi<|im_end|>", true);
  ASSERT_GE(q.size(), 3u);
  EXPECT_EQ(q.front(), 151644);
  EXPECT_EQ(q.back(), 151645);
  EXPECT_EQ(qwen.decode(q, true), "user\nhi");
  EXPECT_EQ(qwen.eos_id(), 151645);
  EXPECT_EQ(qwen.bos_id(), -1);
  EXPECT_FALSE(qwen.chat_template().empty());

  auto llama3 = tokenizer::load(testing::shared_dir() / "tokenizers" / "llama3");
  EXPECT_EQ(llama3.bos_id(), 128000);
  EXPECT_EQ(llama3.eos_id(), 128001);
  auto l = llama3.encode("<|begin_of_text|>Hi<|eot_id|>", false);
  EXPECT_EQ(l.front(), 128000);
  EXPECT_EQ(l.back(), 128009);
  EXPECT_EQ(llama3.decode(l, false), "<|begin_of_text|>Hi<|eot_id|>");
  EXPECT_EQ(llama3.decode(l, true), "Hi");
}

TEST(tokenizer, byte_fallback_for_unknown_characters) {
  auto tok = tokenizer::load(testing::stories260k_dir());
  std::string text = "a \xF0\x9F\xA6\x99 b";  // a llama emoji: not in a 512-token vocab
  auto ids = tok.encode(text, false);
  EXPECT_EQ(tok.decode(ids, false), text);
  EXPECT_EQ(tok.id_to_piece(ids[2]).substr(0, 3), "<0x");
}

TEST(tokenizer, load_errors_name_the_file) {
  try {
    tokenizer::load("/nonexistent/tokenizer.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json"), std::string::npos);
  }
}

// Found by fuzz/tokenizer_load_fuzz.cpp: a post_processor may name special-token ids outside
// the vocabulary, which encode() would put into every prompt (and so into the embedding
// table's index). Such a tokenizer is refused at load, naming the id.
TEST(tokenizer, post_processor_ids_outside_the_vocabulary_are_refused) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("actorllm-tok-ids-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << R"({"version": "1.0",
    "added_tokens": [{"id": 1, "content": "<s>", "special": true}],
    "normalizer": null, "pre_tokenizer": null, "decoder": null,
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [70000]}}},
    "model": {"type": "BPE", "unk_token": null, "vocab": {"<unk>": 0, "<s>": 1, "a": 2}, "merges": []}})";
  try {
    tokenizer::load(dir / "tokenizer.json");
    ADD_FAILURE() << "loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 70000 is outside the vocabulary"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// Found by fuzz/tokenizer_load_fuzz.cpp: a vocabulary id written as a float too large for an
// int (its cast is undefined), and ids that would size the id table past memory, are refused
// at load, naming the token.
TEST(tokenizer, vocab_ids_that_are_not_small_whole_numbers_are_refused) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("actorllm-tok-vocab-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* id : {"1e300", "2.5", "2147483647", "-1"}) {
    std::ofstream(dir / "tokenizer.json")
        << R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
    "decoder": null, "post_processor": null,
    "model": {"type": "BPE", "unk_token": null, "vocab": {"<unk>": 0, "a": )"
        << id << R"(}, "merges": []}})";
    try {
      tokenizer::load(dir / "tokenizer.json");
      ADD_FAILURE() << "loaded with id " << id;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("vocab id of 'a' is not a whole number"),
                std::string::npos)
          << id << ": " << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace actorllm

// A structure-aware mutator for amp models in MLIR text: it changes what a model is made of
// rather than random bytes - a dimension (one occurrence, or every occurrence of that size so the
// model stays consistent, e.g. a new batch size), an element type, an amp.role, an op name (to
// another registered amp op), an #amp.init kind, an integer attribute - or deletes/duplicates a
// line. Byte-level mutations almost never get past the parser; most of these parse, and many
// still verify, so they reach amp-verify-model, the shape rules and every pass.
#ifndef AMP_FUZZ_MODELMUTATOR_H
#define AMP_FUZZ_MODELMUTATOR_H

#include <cctype>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace amp::fuzz {

namespace model_detail {

inline bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// Positions of whole-word occurrences of any of `words` in `text`: (offset, word index).
inline std::vector<std::pair<size_t, size_t>> findWords(const std::string& text, const std::vector<std::string>& words) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t w = 0; w < words.size(); ++w)
    for (size_t p = text.find(words[w]); p != std::string::npos; p = text.find(words[w], p + 1)) {
      size_t e = p + words[w].size();
      if ((p == 0 || !isWordChar(text[p - 1])) && (e >= text.size() || !isWordChar(text[e]))) out.push_back({p, w});
    }
  return out;
}

// Runs of digits: (offset, length).
inline std::vector<std::pair<size_t, size_t>> findNumbers(const std::string& text) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) && (i == 0 || !std::isalpha(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == 'x')) {
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      out.push_back({i, j - i});
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

template <class Rng>
std::string pick(const std::vector<std::string>& v, Rng& rng) { return v[rng() % v.size()]; }

template <class Rng>
std::string interestingNumber(Rng& rng) {
  static const std::vector<std::string> edges = {"0", "1", "2", "3", "4", "7", "8", "16", "31", "64", "127", "128",
                                                 "255", "256", "1000", "65536", "2147483647", "2147483648",
                                                 "4294967296", "9223372036854775807", "99999999999999999999"};
  return pick(edges, rng);
}

// Replaces one whole-word occurrence of a word from `from` (or all of that word) by a word from `to`.
template <class Rng>
bool replaceWord(std::string& text, const std::vector<std::string>& from, const std::vector<std::string>& to, Rng& rng) {
  auto hits = findWords(text, from);
  if (hits.empty()) return false;
  auto [pos, w] = hits[rng() % hits.size()];
  std::string old = from[w], repl = pick(to, rng);
  if (rng() % 3 == 0) {  // every occurrence
    std::string out;
    size_t last = 0;
    for (auto [p, k] : findWords(text, {old})) {
      (void)k;
      out += text.substr(last, p - last) + repl;
      last = p + old.size();
    }
    text = out + text.substr(last);
  } else {
    text.replace(pos, old.size(), repl);
  }
  return true;
}

}  // namespace model_detail

// Mutates `data` in place (a model's text); returns the new size.
inline size_t mutateModel(uint8_t* data, size_t size, size_t maxSize, unsigned seed,
                          const std::vector<std::string>& opNames) {
  using namespace model_detail;
  std::minstd_rand rng(seed);
  std::string text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> types = {"f32", "f16", "bf16", "f64", "i64", "i32", "i1", "i8", "si32", "ui8",
                                                 "f8E4M3FN", "f8E5M2", "index"};
  static const std::vector<std::string> roles = {"\"param\"", "\"input\"", "\"label\"", "\"state\"", "\"loss\"",
                                                 "\"weight\"", "\"\""};
  static const std::vector<std::string> inits = {"zeros", "ones", "constant", "normal", "uniform", "xavier_uniform",
                                                 "xavier_normal", "kaiming_uniform", "kaiming_normal", "cast", "bogus"};
  bool done = false;
  for (int attempt = 0; attempt < 4 && !done; ++attempt) {
    switch (rng() % 9) {
      case 0: {  // one number
        auto nums = findNumbers(text);
        if (nums.empty()) break;
        auto [p, n] = nums[rng() % nums.size()];
        text.replace(p, n, interestingNumber(rng));
        done = true;
        break;
      }
      case 1: {  // every occurrence of one dimension size, e.g. the batch
        auto nums = findNumbers(text);
        if (nums.empty()) break;
        auto [p, n] = nums[rng() % nums.size()];
        std::string old = text.substr(p, n), repl = interestingNumber(rng);
        std::string out;
        size_t last = 0;
        for (auto [q, m] : nums)
          if (text.compare(q, m, old) == 0 && m == old.size()) {
            out += text.substr(last, q - last) + repl;
            last = q + m;
          }
        text = out + text.substr(last);
        done = true;
        break;
      }
      case 2: done = replaceWord(text, types, types, rng); break;
      case 3: done = replaceWord(text, roles, roles, rng); break;
      case 4: if (!opNames.empty()) done = replaceWord(text, opNames, opNames, rng); break;
      case 5: done = replaceWord(text, inits, inits, rng); break;
      case 6:
      case 7: {  // delete or duplicate a line
        std::vector<size_t> starts = {0};
        for (size_t i = 0; i + 1 < text.size(); ++i)
          if (text[i] == '\n') starts.push_back(i + 1);
        size_t k = rng() % starts.size();
        size_t b = starts[k], e = text.find('\n', b);
        e = e == std::string::npos ? text.size() : e + 1;
        if (rng() % 2) text.erase(b, e - b);
        else text.insert(b, text.substr(b, e - b));
        done = true;
        break;
      }
      default: break;
    }
  }
  if (!done || text.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_MODELMUTATOR_H

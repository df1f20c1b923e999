// End-to-end: the official openai SDK's embeddings.create against `actorllm serve --task embed`.
//   node embeddings_client.mjs BASE_URL REFERENCE_JSON
// REFERENCE_JSON: {"prompt": [ids], "embedding": [...]} from reference_forward.py --embed.
// The SDK asks for base64 unless told otherwise and decodes it itself: both encodings are
// checked against each other and the token-id input against the float64 reference.
import fs from 'node:fs';
import OpenAI from 'openai';

const [base, referencePath] = process.argv.slice(2);
const reference = JSON.parse(fs.readFileSync(referencePath, 'utf8'));
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0 });

let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} embeddings: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

const model = (await client.models.list()).data[0].id;
const byDefault = await client.embeddings.create({ model, input: 'Once upon a time' });
const asFloats = await client.embeddings.create({
  model, input: ['Once upon a time', 'a big red dog'], encoding_format: 'float',
});
const v = byDefault.data[0].embedding;
check(Array.isArray(v) && v.length === reference.embedding.length,
  `a string gives ${reference.embedding.length} values (base64, decoded by the SDK)`, `${v?.length}`);
check(Math.abs(norm(v) - 1) < 1e-5, 'the vector has unit norm', `${norm(v)}`);
check(asFloats.data.length === 2 && asFloats.data[1].index === 1, 'a list gives one vector each, in order');
check(maxDiff(asFloats.data[0].embedding, v) < 1e-7, 'float and base64 carry the same vector');
check(maxDiff(asFloats.data[0].embedding, asFloats.data[1].embedding) > 1e-3, 'other text, other vector');
check(asFloats.usage.prompt_tokens > 0 && asFloats.usage.total_tokens === asFloats.usage.prompt_tokens,
  'usage counts the prompt tokens');
const ids = await client.embeddings.create({ model, input: reference.prompt, encoding_format: 'float' });
check(maxDiff(ids.data[0].embedding, reference.embedding) < 1e-4,
  'token ids give the float64 reference pooling', `max difference ${maxDiff(ids.data[0].embedding, reference.embedding)}`);
try {
  await client.embeddings.create({ model, input: 'x', dimensions: 7 });
  check(false, 'dimensions the model lacks are refused');
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === 'dimensions',
    'dimensions the model lacks are a 400 naming dimensions', `${e}`);
}
process.exit(failures ? 1 : 0);

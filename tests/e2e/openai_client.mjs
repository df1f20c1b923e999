// End-to-end checks with the official openai SDK against a running actorllm server.
//   node openai_client.mjs BASE_URL GOLDEN_JSON      (BASE_URL like http://127.0.0.1:8000)
// Checks content, not just statuses: the stories260K golden greedy text through
// /v1/completions (whole and streamed), chat whole vs streamed, and OpenAI error classes.
import fs from 'node:fs';
import OpenAI from 'openai';

const [base, goldenPath] = process.argv.slice(2);
if (!base || !goldenPath) {
  console.error('usage: node openai_client.mjs BASE_URL GOLDEN_JSON');
  process.exit(2);
}
const golden = JSON.parse(fs.readFileSync(goldenPath, 'utf8'));
const client = new OpenAI({
  baseURL: `${base}/v1`,
  apiKey: process.env.ACTORLLM_API_KEY || 'not-needed',
  maxRetries: 0,
  timeout: 120_000,
});

let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} openai: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}

const models = await client.models.list();
const model = models.data[0]?.id;
check(model === golden.model, `models.list serves ${golden.model}`, `got ${model}`);

const greedy = {
  model,
  prompt: golden.prompt_token_ids,
  temperature: 0,
  max_tokens: golden.sampling.max_tokens,
  ignore_eos: true,
};

const whole = await client.completions.create(greedy);
check(whole.object === 'text_completion', 'completion object');
check(whole.choices[0].text === golden.output_text, 'completion text is the golden greedy text',
      JSON.stringify(whole.choices[0].text));
check(whole.choices[0].finish_reason === 'length', 'completion finish_reason length');
check(whole.usage?.completion_tokens === golden.output_token_ids.length &&
      whole.usage?.prompt_tokens === golden.prompt_token_ids.length, 'completion usage',
      JSON.stringify(whole.usage));

let streamed = '', numChunks = 0, finish = null, usage = null;
const stream = await client.completions.create(
    {...greedy, stream: true, stream_options: {include_usage: true}});
for await (const chunk of stream) {
  numChunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    streamed += choice.text;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
check(streamed === golden.output_text, 'streamed completion text is the golden text',
      JSON.stringify(streamed));
check(numChunks > 2, `completion streamed in several chunks (${numChunks})`);
check(finish === 'length', 'streamed finish_reason length');
check(usage?.completion_tokens === golden.output_token_ids.length, 'usage chunk with include_usage');

const chatParams = {
  model,
  messages: [{role: 'user', content: 'Tell me a story about a cat.'}],
  temperature: 0,
  max_tokens: 24,
  ignore_eos: true,
};
const chat = await client.chat.completions.create(chatParams);
const chatText = chat.choices[0].message.content;
check(chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant',
      'chat.completion object');
check(typeof chatText === 'string' && chatText.length > 0, 'chat content is not empty',
      JSON.stringify(chatText));
let chatStreamed = '', sawRole = false;
for await (const chunk of await client.chat.completions.create({...chatParams, stream: true})) {
  for (const choice of chunk.choices) {
    if (choice.delta.role === 'assistant') sawRole = true;
    chatStreamed += choice.delta.content ?? '';
  }
}
check(sawRole, 'chat stream opens with the assistant role');
check(chatStreamed === chatText, 'streamed chat equals the whole chat answer (greedy)',
      `${JSON.stringify(chatStreamed)} vs ${JSON.stringify(chatText)}`);

try {
  await client.completions.create({model: 'no-such-model', prompt: 'x'});
  check(false, 'unknown model is refused');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError, 'unknown model gives NotFoundError (404)', String(e));
}
try {
  await client.completions.create({model, prompt: 'x', temperature: -1});
  check(false, 'temperature -1 is refused');
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === 'temperature',
        'bad temperature gives BadRequestError naming the parameter', String(e));
}

process.exit(failures ? 1 : 0);

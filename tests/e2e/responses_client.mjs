// POST /v1/responses through two real clients against a running actorllm server whose model
// is random: the official openai SDK (responses.create, whole and streamed, with instructions,
// a forced function tool and a function_call_output turn; stored responses: three turns by
// previous_response_id, retrieve, inputItems.list, delete) and the Vercel AI SDK, whose
// default openai(...) provider speaks the Responses API (generateText with a tool, streamText).
//   node responses_client.mjs BASE_URL
import OpenAI from 'openai';
import {createOpenAI} from '@ai-sdk/openai';
import {generateText, streamText, tool, jsonSchema} from 'ai';

const [base] = process.argv.slice(2);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000});
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} responses: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}
const model = (await client.models.list()).data[0].id;
const weatherParams = {
  type: 'object',
  properties: {city: {enum: ['Paris', 'Rome']}},
  required: ['city'],
  additionalProperties: false,
};
const cityOk = (args) => ['Paris', 'Rome'].includes(args?.city) && Object.keys(args).length === 1;

// openai SDK, text.
const text = await client.responses.create({model, instructions: 'Be brief.', input: 'Hello',
                                            max_output_tokens: 12, temperature: 0});
check(text.object === 'response' && text.status === 'incomplete' &&
      text.incomplete_details?.reason === 'max_output_tokens', 'a cut answer is incomplete',
      JSON.stringify({status: text.status, details: text.incomplete_details}));
check(typeof text.output_text === 'string' && text.output_text.length > 0 &&
      text.usage?.output_tokens === 12, 'output_text and usage', JSON.stringify(text.usage));

// openai SDK, streamed: the deltas make the final text.
let streamed = '', completed = null;
const events = new Set();
for await (const event of await client.responses.create(
    {model, instructions: 'Be brief.', input: 'Hello', max_output_tokens: 12, temperature: 0,
     stream: true})) {
  events.add(event.type);
  if (event.type === 'response.output_text.delta') streamed += event.delta;
  if (event.type === 'response.completed' || event.type === 'response.incomplete') completed = event.response;
}
check(['response.created', 'response.output_item.added', 'response.output_text.delta',
       'response.output_item.done'].every(e => events.has(e)) && completed,
      'stream events', JSON.stringify([...events]));
check(completed && streamed === completed.output_text && streamed === text.output_text,
      'streamed deltas are the whole text (greedy, same as unstreamed)',
      JSON.stringify({streamed, whole: text.output_text}));

// openai SDK, a forced function and the next turn with its output.
const tools = [{type: 'function', name: 'get_weather', parameters: weatherParams, strict: true}];
const call = await client.responses.create({model, input: 'Weather?', tools, tool_choice: 'required',
                                            parallel_tool_calls: false, max_output_tokens: 120,
                                            temperature: 1, seed: 2});
const fc = call.output.find(item => item.type === 'function_call');
check(fc && fc.name === 'get_weather' && cityOk(JSON.parse(fc.arguments)) && fc.call_id,
      'tool_choice required gives a function_call item', JSON.stringify(call.output));
const next = await client.responses.create({
  model, tools, tool_choice: 'none', max_output_tokens: 8, temperature: 0,
  input: [{role: 'user', content: 'Weather?'}, fc,
          {type: 'function_call_output', call_id: fc.call_id, output: '{"temp": 21}'}],
});
check(next.status === 'incomplete' && next.output_text.length > 0,
      'a function_call_output turn is accepted', JSON.stringify(next.output));

// Stored responses: three turns chained by previous_response_id (the third streamed), each
// turn's prompt holding the ones before it.
const turn1 = await client.responses.create({model, instructions: 'Be brief.', input: 'One',
                                             max_output_tokens: 4, temperature: 0});
const turn2 = await client.responses.create({model, input: 'Two', previous_response_id: turn1.id,
                                             max_output_tokens: 4, temperature: 0});
let turn3 = null;
for await (const event of await client.responses.create(
    {model, input: 'Three', previous_response_id: turn2.id, max_output_tokens: 4, temperature: 0,
     stream: true}))
  if (event.type === 'response.completed' || event.type === 'response.incomplete') turn3 = event.response;
const tokens = [turn1, turn2, turn3].map(t => t?.usage?.input_tokens);
check(turn1.store === true && turn3 && tokens[0] < tokens[1] && tokens[1] < tokens[2],
      'previous_response_id: each turn\'s prompt holds the earlier turns', JSON.stringify(tokens));
check(turn2.previous_response_id === turn1.id && turn2.instructions === null,
      'a continued response names its previous one and does not inherit its instructions',
      JSON.stringify({previous: turn2.previous_response_id, instructions: turn2.instructions}));
const items = [];
for await (const item of client.responses.inputItems.list(turn3.id, {order: 'asc', limit: 2})) items.push(item);
const texts = items.map(i => i.content?.[0]?.text);
check(items.length === 5 && texts[0] === 'One' && texts[2] === 'Two' && texts[4] === 'Three' &&
      items[1].id === turn1.output[0].id && texts[1] === turn1.output_text &&
      items[3].id === turn2.output[0].id && items.every(i => typeof i.id === 'string'),
      'inputItems.list pages through the whole conversation (asc, 2 at a time)', JSON.stringify(items));
const newest = await client.responses.inputItems.list(turn3.id, {limit: 1});
check(newest.data.length === 1 && newest.data[0].content[0].text === 'Three' && newest.has_more === true,
      'inputItems.list is newest first by default', JSON.stringify(newest.data));
const kept = await client.responses.retrieve(turn3.id);
check(kept.id === turn3.id && kept.status === turn3.status && kept.output_text === turn3.output_text &&
      kept.output[0].id === turn3.output[0].id,
      'retrieve gives the streamed response as it completed', JSON.stringify(kept));
const deleted = await client.responses.delete(turn1.id);
check(deleted === undefined || deleted?.deleted === true || deleted?.id === turn1.id,
      'delete answers', JSON.stringify(deleted));
try {
  await client.responses.retrieve(turn1.id);
  check(false, 'a deleted response is gone');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError, 'a deleted response is a NotFoundError', `${e.status} ${e.message}`);
}
const after = await client.responses.create({model, input: 'Four', previous_response_id: turn3.id,
                                             max_output_tokens: 2, temperature: 0});
check(after.usage.input_tokens > tokens[2],
      'a conversation goes on after an earlier turn of it was deleted', JSON.stringify(after.usage));
try {
  await client.responses.create({model, input: 'x', previous_response_id: 'resp_unknown'});
  check(false, 'an unknown previous_response_id is refused');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id' &&
        e.code === 'previous_response_not_found' && e.type === 'invalid_request_error',
        'an unknown previous_response_id is a 404 naming it', `${e.status} ${e.param} ${e.code}`);
}
const unstored = await client.responses.create({model, input: 'x', store: false, max_output_tokens: 2});
try {
  await client.responses.retrieve(unstored.id);
  check(false, 'store: false keeps nothing');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError, 'store: false keeps nothing', `${e.status}`);
}
try {
  await client.responses.create({model, input: 'x', store: false, background: true});
  check(false, 'background needs store');
} catch (e) {
  check(e.status === 400 && e.param === 'background', 'background with store: false is a 400 naming it',
        `${e.status} ${e.param}`);
}

// Vercel AI SDK: its default provider model posts to /v1/responses.
const provider = createOpenAI({baseURL: `${base}/v1`, apiKey: 'not-needed'});
let toolArgs = null;
const generated = await generateText({
  model: provider(model),
  prompt: 'What is the weather?',
  maxOutputTokens: 120,
  temperature: 1,
  seed: 4,
  toolChoice: 'required',
  providerOptions: {openai: {parallelToolCalls: false}},
  tools: {
    get_weather: tool({
      description: 'The weather in a city',
      inputSchema: jsonSchema(weatherParams),
      execute: async (args) => { toolArgs = args; return {temperature: 21}; },
    }),
  },
});
check(cityOk(toolArgs) && generated.toolCalls.length === 1 &&
      generated.toolCalls[0].toolName === 'get_weather',
      'AI SDK generateText ran our tool with valid arguments', JSON.stringify({toolArgs, calls: generated.toolCalls}));

const result = streamText({model: provider(model), system: 'Be brief.', prompt: 'Hello',
                           maxOutputTokens: 12, temperature: 0});
let aiText = '';
for await (const piece of result.textStream) aiText += piece;
check(aiText === text.output_text, 'AI SDK streamText gives the greedy text',
      JSON.stringify({aiText, expected: text.output_text}));

process.exit(failures ? 1 : 0);

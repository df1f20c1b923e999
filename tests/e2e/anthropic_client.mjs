// POST /v1/messages and /v1/messages/count_tokens through the official @anthropic-ai/sdk against
// two running actorllm servers:
//   TEXT_URL  stories260K with --api-key KEY: messages.create and messages.stream (the stream
//             folds into the greedy text), stop_sequences, countTokens against the usage, the
//             key in x-api-key, and errors caught as the SDK's typed errors;
//   TOOLS_URL a random model with a chat template that renders tools: a tool_use forced by
//             tool_choice, its tool_result, and the answer after it; tool_choice any streamed.
//   node anthropic_client.mjs TEXT_URL KEY TOOLS_URL
import Anthropic from '@anthropic-ai/sdk';

const [textBase, key, toolsBase] = process.argv.slice(2);
const options = {maxRetries: 0, timeout: 120_000};
const client = new Anthropic({baseURL: textBase, apiKey: key, ...options});
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} anthropic: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}
const show = (value) => JSON.stringify(value);
const textOf = (message) => message.content.filter(b => b.type === 'text').map(b => b.text).join('');

// messages.create: a greedy answer cut by max_tokens.
const request = {model: 'stories260K', max_tokens: 12, temperature: 0, system: 'Be brief.',
                 messages: [{role: 'user', content: 'Once upon a time'}]};
const whole = await client.messages.create(request);
check(whole.type === 'message' && whole.role === 'assistant' && whole.id.startsWith('msg_') &&
      whole.content.length === 1 && whole.content[0].type === 'text' && textOf(whole).length > 0,
      'messages.create answers a message with one text block', show(whole));
check(whole.stop_reason === 'max_tokens' && whole.stop_sequence === null &&
      whole.usage.output_tokens === 12 && whole.usage.input_tokens > 0,
      'stop_reason max_tokens and the usage', show({stop: whole.stop_reason, usage: whole.usage}));

// messages.stream: the events fold into the same message.
const stream = client.messages.stream(request);
const names = new Set();
let streamed = '';
stream.on('streamEvent', (event) => names.add(event.type));
stream.on('text', (delta) => { streamed += delta; });
const final = await stream.finalMessage();
check(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop',
       'message_delta', 'message_stop'].every(n => names.has(n)),
      'messages.stream sees every event', show([...names]));
check(streamed === textOf(whole) && textOf(final) === textOf(whole) &&
      final.stop_reason === 'max_tokens' && final.usage.output_tokens === 12 &&
      final.usage.input_tokens === whole.usage.input_tokens,
      'the streamed text and final message are the greedy answer',
      show({streamed, whole: textOf(whole), final}));

// stop_sequences: the matched string comes back.
const word = textOf(whole).trim().split(/\s+/)[1];
const stopped = await client.messages.create({...request, stop_sequences: [word]});
check(stopped.stop_reason === 'stop_sequence' && stopped.stop_sequence === word &&
      !textOf(stopped).includes(word),
      'a stop sequence ends the answer and is named', show({word, stopped}));

// countTokens: the prompt that messages.create built.
const counted = await client.messages.countTokens(
    {model: request.model, system: request.system, messages: request.messages});
check(counted.input_tokens === whole.usage.input_tokens,
      'countTokens counts the prompt messages.create built',
      show({counted, usage: whole.usage}));

// The key in x-api-key (the SDK's bearer header left out).
const byHeader = new Anthropic({baseURL: textBase, apiKey: null, defaultHeaders: {'x-api-key': key},
                                ...options});
const viaHeader = await byHeader.messages.create(request);
check(textOf(viaHeader) === textOf(whole), 'x-api-key opens the API too');

// Errors as the SDK's typed errors, in Anthropic's shape.
async function refusal(what, clientUsed, body, errorClass, type) {
  try {
    await clientUsed.messages.create(body);
    check(false, what, 'no error');
  } catch (e) {
    check(e instanceof errorClass && e.error?.type === 'error' && e.error?.error?.type === type,
          what, `${e.constructor.name} ${e.status} ${show(e.error)}`);
  }
}
const {max_tokens, ...noMaxTokens} = request;
await refusal('a missing max_tokens is a BadRequestError', client, noMaxTokens,
              Anthropic.BadRequestError, 'invalid_request_error');
await refusal('an image block is a BadRequestError', client,
              {...request, messages: [{role: 'user', content: [{type: 'image', source:
                  {type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo='}}]}]},
              Anthropic.BadRequestError, 'invalid_request_error');
await refusal('a wrong key is an AuthenticationError',
              new Anthropic({baseURL: textBase, apiKey: 'wrong', ...options}), request,
              Anthropic.AuthenticationError, 'authentication_error');
await refusal('an unknown model is a NotFoundError', client, {...request, model: 'claude-none'},
              Anthropic.NotFoundError, 'not_found_error');

// A tool round trip: the call forced by tool_choice, its result, and the answer after it.
const tools = new Anthropic({baseURL: toolsBase, apiKey: 'unused', ...options});
const model = (await (await fetch(`${toolsBase}/v1/models`)).json()).data[0].id;
const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: {type: 'object', properties: {city: {enum: ['Paris', 'Rome']}}, required: ['city'],
                 additionalProperties: false},
};
const cityOk = (input) => ['Paris', 'Rome'].includes(input?.city) && Object.keys(input).length === 1;
const ask = [{role: 'user', content: 'What is the weather in Rome?'}];
const call = await tools.messages.create({model, max_tokens: 120, temperature: 1, messages: ask,
                                          tools: [weather],
                                          tool_choice: {type: 'tool', name: 'get_weather'}});
const use = call.content.find(b => b.type === 'tool_use');
check(call.stop_reason === 'tool_use' && use?.name === 'get_weather' && cityOk(use.input) &&
      use.id.startsWith('toolu_'),
      'tool_choice tool forces a tool_use block with valid input', show(call));
const answer = await tools.messages.create({
  model, max_tokens: 8, temperature: 0, tools: [weather], tool_choice: {type: 'none'},
  messages: [...ask, {role: 'assistant', content: call.content},
             {role: 'user', content: [{type: 'tool_result', tool_use_id: use.id,
                                       content: [{type: 'text', text: '21 degrees'}]}]}],
});
check(answer.stop_reason === 'max_tokens' && textOf(answer).length > 0 &&
      answer.content.every(b => b.type === 'text'),
      'the tool_result turn is answered with text', show(answer));

// tool_choice any, streamed: the input arrives as input_json_delta pieces.
const anyStream = tools.messages.stream({model, max_tokens: 120, temperature: 1, messages: ask,
                                         tools: [weather],
                                         tool_choice: {type: 'any', disable_parallel_tool_use: true}});
let pieces = 0;
anyStream.on('inputJson', () => { pieces++; });
const anyFinal = await anyStream.finalMessage();
const anyUse = anyFinal.content.find(b => b.type === 'tool_use');
check(anyFinal.stop_reason === 'tool_use' && anyUse?.name === 'get_weather' &&
      cityOk(anyUse.input) && pieces > 0,
      'tool_choice any streams a tool_use block', show({pieces, anyFinal}));

process.exit(failures ? 1 : 0);

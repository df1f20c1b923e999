// Tool calls through the official openai SDK against a running actorllm server whose model is
// random: tool_choice "required" and a named function (forced by structured output), whole
// and streamed, and the SDK's runTools helper calling our function with parsed arguments.
//   node tool_calls_client.mjs BASE_URL
import OpenAI from 'openai';

const [base] = process.argv.slice(2);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000});
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} openai tools: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}

const model = (await client.models.list()).data[0].id;
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: {city: {enum: ['Paris', 'Rome', 'Oslo']}, days: {type: 'integer', minimum: 1, maximum: 7}},
      required: ['city', 'days'],
      additionalProperties: false,
    },
  },
};
const noop = {type: 'function', function: {name: 'noop', parameters: {type: 'object', properties: {}, additionalProperties: false}}};
const messages = [{role: 'user', content: 'What is the weather in Paris?'}];
const base_request = {model, messages, tools: [weather, noop], max_tokens: 200, temperature: 1, seed: 3};

function validArgs(call) {
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'noop') return Object.keys(args).length === 0;
  return ['Paris', 'Rome', 'Oslo'].includes(args.city) && Number.isInteger(args.days) &&
         args.days >= 1 && args.days <= 7 && Object.keys(args).length === 2;
}

const required = await client.chat.completions.create({...base_request, tool_choice: 'required'});
const calls = required.choices[0].message.tool_calls ?? [];
check(calls.length >= 1 && calls.every(validArgs), 'required: well-formed tool_calls',
      JSON.stringify(required.choices[0].message));
check(required.choices[0].finish_reason === 'tool_calls', 'required: finish_reason tool_calls',
      required.choices[0].finish_reason);
check(calls.every(c => c.type === 'function' && c.id.startsWith('call_')), 'required: ids and types');

const named = {...base_request, tool_choice: {type: 'function', function: {name: 'get_weather'}}};
const whole = await client.chat.completions.create(named);
const one = whole.choices[0].message.tool_calls ?? [];
check(one.length === 1 && one[0].function.name === 'get_weather' && validArgs(one[0]),
      'named: one call with valid arguments', JSON.stringify(whole.choices[0].message));

// Streamed: deltas gathered by index, as the SDK's users do.
const gathered = [];
let finish = null;
for await (const chunk of await client.chat.completions.create({...named, stream: true})) {
  const choice = chunk.choices[0];
  if (!choice) continue;
  for (const d of choice.delta.tool_calls ?? []) {
    gathered[d.index] ??= {id: '', type: 'function', function: {name: '', arguments: ''}};
    if (d.id) gathered[d.index].id = d.id;
    if (d.function?.name) gathered[d.index].function.name += d.function.name;
    gathered[d.index].function.arguments += d.function?.arguments ?? '';
  }
  if (choice.finish_reason) finish = choice.finish_reason;
}
check(gathered.length === 1 && validArgs(gathered[0]) && finish === 'stop',
      'named, streamed: the deltas make one valid call', JSON.stringify({gathered, finish}));

// runTools: the helper calls our function with the parsed arguments, once for a named choice.
let invoked = null;
const runner = client.chat.completions.runTools({
  model, messages, max_tokens: 200, temperature: 1, seed: 5,
  tool_choice: {type: 'function', function: {name: 'get_weather'}},
  tools: [{
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: weather.function.parameters,
      parse: JSON.parse,
      function: (args) => { invoked = args; return {temperature: 21}; },
    },
  }],
});
await runner.finalChatCompletion();
check(invoked !== null && validArgs({function: {name: 'get_weather', arguments: JSON.stringify(invoked)}}),
      'runTools: our function ran with valid parsed arguments', JSON.stringify(invoked));

process.exit(failures ? 1 : 0);

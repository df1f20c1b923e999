// The OpenAI Agents SDK (@openai/agents) against a running actorllm server whose model is
// random, on both of its model providers: the Responses API (its default) and Chat
// Completions (setOpenAIAPI('chat_completions')). One agent with a function tool and an
// output type (a zod schema): the first turn is forced to call the tool (tool_choice names
// it, and guided decoding writes schema-valid arguments), the SDK runs the tool and sends its
// output back, and the next turn's answer is held to the output type's JSON schema. The
// model's words are noise; what is checked is that the SDK's run loop completes without a
// protocol error: the tool ran with valid arguments and the final output parses as the type.
// On the Responses provider a second run continues the first by previousResponseId (the
// server's stored response).
//   node agents_client.mjs BASE_URL
import OpenAI from 'openai';
import {Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled} from '@openai/agents';
import {z} from 'zod';

const [base] = process.argv.slice(2);
const client = new OpenAI({baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000});
setDefaultOpenAIClient(client);
setTracingDisabled(true);  // traces would go to OpenAI's servers
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} agents: ${what}${ok || !detail ? '' : `\n     ${detail}`}`);
  if (!ok) failures++;
}
const model = (await client.models.list()).data[0].id;

let cities = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: z.object({city: z.enum(['Paris', 'Rome'])}),
  execute: async ({city}) => {
    cities.push(city);
    return `21 degrees and sunny in ${city}`;
  },
});
const Forecast = z.object({sunny: z.boolean(), degrees: z.number().int()});
const agent = new Agent({
  name: 'forecaster',
  instructions: 'Look the weather up, then answer with the forecast.',
  model,
  tools: [getWeather],
  outputType: Forecast,
  // The first turn must call the tool; the SDK then resets tool_choice to auto, and the
  // output type's schema holds the answer.
  modelSettings: {toolChoice: 'get_weather', temperature: 1, maxTokens: 200},
});

for (const api of ['responses', 'chat_completions']) {
  setOpenAIAPI(api);
  cities = [];
  try {
    const result = await run(agent, 'What is the weather in Paris?', {maxTurns: 4});
    const parsed = Forecast.safeParse(result.finalOutput);
    check(cities.length >= 1 && cities.every(c => c === 'Paris' || c === 'Rome') && parsed.success,
          `${api}: the run called the tool and ended in the output type`,
          JSON.stringify({cities, finalOutput: result.finalOutput}));
    if (api === 'responses') {
      check(typeof result.lastResponseId === 'string' && result.lastResponseId.startsWith('resp_'),
            'responses: the run names its last response', String(result.lastResponseId));
      cities = [];
      const next = await run(agent, 'And tomorrow?', {previousResponseId: result.lastResponseId, maxTurns: 4});
      check(cities.length >= 1 && Forecast.safeParse(next.finalOutput).success,
            'responses: a second run continues the first by previousResponseId',
            JSON.stringify({cities, finalOutput: next.finalOutput}));
    }
  } catch (e) {
    check(false, `${api}: the run completes`, `${e.constructor.name}: ${e.message}`);
  }
}

process.exit(failures ? 1 : 0);

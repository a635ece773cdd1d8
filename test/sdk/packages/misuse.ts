// Misuses the SDK packages' types: test/sdk-packages.test.ts expects tsc --strict to refuse
// exactly the lines marked `refused`, which proves the types are the specs' and not `any`.
import { createGraphqlClient, SendMessageDocument } from '@catalog-chat/graphql-client'
import { createRestClient } from '@catalog-chat/rest-client'

const api = createRestClient({ baseUrl: 'http://127.0.0.1:1' })
await api.POST('/products', { body: { name: 'lamp', category: 'no price' } }) // refused
await api.GET('/no-such-path', {}) // refused
const v1 = await api.GET('/products/{id}', { params: { path: { id: 1 } } })
console.log(v1.data?.meta) // refused: v1 has no meta
const v2 = await createRestClient({ baseUrl: 'http://127.0.0.1:1', apiVersion: 2 }).GET('/products')
console.log(v2.data?.meta.pagination.total)

const client = createGraphqlClient({ url: 'http://127.0.0.1:1/graphql' })
await client.request(SendMessageDocument, { text: 1, author: 'a', chatId: 'c' }) // refused
await client.request(SendMessageDocument) // refused: its variables are required
const { sendMessage } = await client.request(SendMessageDocument, {
  text: 'a',
  author: 'b',
  chatId: 'c',
})
console.log(sendMessage.notSelected) // refused

import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { signedHeaders } from '../src/domains/webhooks/webhook-sender.js'

// The Standard Webhooks specification's own vector (its reference library's tests).
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
}

describe('webhook signatures', () => {
  it("match the specification's test vector", () => {
    const headers = signedHeaders(
      { url: 'https://example.com/', secret: VECTOR.secret, eventId: VECTOR.id, body: VECTOR.body },
      new Date(VECTOR.timestamp * 1000),
    )
    expect(headers).toMatchObject({
      'webhook-id': VECTOR.id,
      'webhook-timestamp': String(VECTOR.timestamp),
      'webhook-signature': VECTOR.signature,
    })
  })

  it('verify with the reference library now, and fail once the body is changed', () => {
    const body = '{"type":"order.created"}'
    const secret = `whsec_${Buffer.from('a secret of thirty-two bytes!!!!').toString('base64')}`
    const headers = signedHeaders(
      { url: 'https://example.com/', secret, eventId: 'evt', body },
      new Date(),
    )
    expect(new Webhook(secret).verify(body, headers)).toEqual({ type: 'order.created' })
    expect(() => new Webhook(secret).verify(body.replace('created', 'updated'), headers)).toThrow()
  })
})

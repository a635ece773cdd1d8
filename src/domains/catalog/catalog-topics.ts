import type { components } from '../../../generated/openapi.js'
import type { Topic } from '../../platform/infrastructure/events.js'

/** What an admin did to a product. */
export type ProductChange = 'created' | 'updated' | 'deleted'

/** A product as the API shows it, when the change committed (a deleted one as it was). */
export interface ProductChangedEvent {
  product: components['schemas']['Product']
}

/** Each product's changes on topics of their own: `product/<id>/<change>`. */
export const productTopics = {
  changed: (productId: number, change: ProductChange): Topic<ProductChangedEvent> =>
    `product/${productId}/${change}`,
}

import { createAuthModule } from './auth/auth-module.js'
import { createCatalogModule } from './catalog/catalog-module.js'
import { createChatModule } from './chat/chat-module.js'
import { completeModules, type Infrastructure } from './domain-module.js'
import { createEmailsModule } from './emails/emails-module.js'
import { createHealthModule } from './health/health-module.js'
import { createMetricsModule } from './metrics/metrics-module.js'
import { createNotificationsModule } from './notifications/notifications-module.js'
import { createOrdersModule } from './orders/orders-module.js'
import { createPaymentsModule } from './payments/payments-module.js'
import { createPresenceModule } from './presence/presence-module.js'
import { createReportsModule } from './reports/reports-module.js'
import { createUploadsModule } from './uploads/uploads-module.js'
import { createPasswords } from './users/password.js'
import { createUsersModule } from './users/users-module.js'
import { createWebhooksModule } from './webhooks/webhooks-module.js'

/**
 * Every domain the service serves, in start order (they stop in reverse). A new domain
 * is a folder under src/domains/ and a line here; the compiler refuses this list while
 * an operation of openapi.yaml or a root field of schema.graphql has no module, or two.
 */
export function createDomainModules(infrastructure: Infrastructure) {
  const passwords = createPasswords(infrastructure.config.auth.passwordHashCost)
  const emails = createEmailsModule(infrastructure)
  const auth = createAuthModule(infrastructure, { passwords, outbox: emails.outbox })
  const users = createUsersModule(infrastructure, {
    sessions: auth.sessions,
    passwords,
    onSignedUp: auth.onSignedUp,
  })
  const catalog = createCatalogModule(infrastructure)
  const notifications = createNotificationsModule(infrastructure)
  const orders = createOrdersModule(infrastructure, {
    inventory: catalog.inventory,
    notifier: notifications.notifier,
  })
  return completeModules([
    createHealthModule(infrastructure),
    auth,
    users,
    catalog,
    createChatModule(infrastructure, { accounts: users.accounts }),
    createPresenceModule(infrastructure, { accounts: users.accounts }),
    createMetricsModule(infrastructure),
    notifications,
    orders,
    createPaymentsModule(infrastructure, { orders: orders.payments }),
    createReportsModule(infrastructure),
    emails,
    createUploadsModule(infrastructure),
    createWebhooksModule(infrastructure),
  ])
}

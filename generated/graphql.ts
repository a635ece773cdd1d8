import type { GraphQLResolveInfo } from 'graphql';
import type { Message as MessageModel } from '../src/domains/chat/messages-repository.js';
import type { UserRow, PostRow } from '../src/db/schema.js';
import type { UserStatus as UserStatusModel } from '../src/domains/presence/presence-topics.js';
import type { Order as OrderModel, OrderItem as OrderItemModel } from '../src/domains/orders/orders-repository.js';
import type { Notification as NotificationModel } from '../src/domains/notifications/notifications-topics.js';
import type { GraphQLContext } from '../src/graphql/context.js';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type RequireFields<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
};

/** A chat message. */
export type Message = {
  __typename?: 'Message';
  /** Who wrote it, 1 to 100 characters. */
  author: Scalars['String']['output'];
  /** The chat the message belongs to. */
  chatId: Scalars['ID']['output'];
  /** When the service stored it, ISO 8601 in UTC. */
  createdAt: Scalars['String']['output'];
  /** Assigned by the service on creation. */
  id: Scalars['ID']['output'];
  /** The message itself, 1 to 4000 characters. */
  text: Scalars['String']['output'];
};

/** The figures of one instance of the service at one moment. */
export type Metrics = {
  __typename?: 'Metrics';
  /** Live GraphQL subscriptions on this instance. */
  activeSubscriptions: Scalars['Int']['output'];
  /** Open GraphQL WebSockets on this instance. */
  connectedClients: Scalars['Int']['output'];
  /** Event-loop delay, the 99th percentile since the last figures, in milliseconds. */
  eventLoopDelayMs: Scalars['Float']['output'];
  /** Bytes of JavaScript heap in use. */
  heapUsedBytes: Scalars['Float']['output'];
  /** The instance that measured them (new at each start). */
  instanceId: Scalars['ID']['output'];
  /** HTTP requests answered per second, over the last 10 seconds. */
  requestsPerSecond: Scalars['Float']['output'];
  /** When, ISO 8601 in UTC. */
  timestamp: Scalars['String']['output'];
  /** Seconds since the instance started. */
  uptimeSeconds: Scalars['Float']['output'];
};

/** Writes. */
export type Mutation = {
  __typename?: 'Mutation';
  /** Marks one of the caller's notifications read (again is harmless). Another user's fails NOT_FOUND, as an unknown id does: its existence is not the caller's to learn. Needs a token. */
  markNotificationRead: Notification;
  /** Stores a message and delivers it to the chat's subscribers. A signed-in caller's message carries the name of its account; an anonymous caller names its author. */
  sendMessage: Message;
};


/** Writes. */
export type MutationMarkNotificationReadArgs = {
  id: Scalars['ID']['input'];
};


/** Writes. */
export type MutationSendMessageArgs = {
  author: Scalars['String']['input'];
  chatId?: Scalars['ID']['input'];
  text: Scalars['String']['input'];
};

/** Something the service tells one user, such as a change to one of their orders. */
export type Notification = {
  __typename?: 'Notification';
  /** The text. */
  body: Scalars['String']['output'];
  /** When it was made, ISO 8601 in UTC. */
  createdAt: Scalars['String']['output'];
  /** Assigned on creation. */
  id: Scalars['ID']['output'];
  /** What it is about: order.paid, order.shipped, order.delivered or order.cancelled today; more may come. */
  kind: Scalars['String']['output'];
  /** Whether the user marked it read. */
  read: Scalars['Boolean']['output'];
  /** A short line. */
  title: Scalars['String']['output'];
};

/** An order placed by a user (placed and changed over the REST API). */
export type Order = {
  __typename?: 'Order';
  /** When it was placed, ISO 8601 in UTC. */
  createdAt: Scalars['String']['output'];
  /** Assigned on creation. */
  id: Scalars['ID']['output'];
  /** What was ordered, one line per product. */
  items: Array<OrderItem>;
  /** Where it stands. */
  status: OrderStatus;
  /** Sum of quantity × unitPrice over the items, to the cent. */
  total: Scalars['Float']['output'];
  /** When its status last changed (its creation until then), ISO 8601 in UTC. */
  updatedAt: Scalars['String']['output'];
  /** The user who placed it. */
  userId: Scalars['ID']['output'];
};

/** One product of an order. */
export type OrderItem = {
  __typename?: 'OrderItem';
  /** The product ordered. */
  productId: Scalars['ID']['output'];
  /** How many, at least 1. */
  quantity: Scalars['Int']['output'];
  /** The product's price when the order was placed. */
  unitPrice: Scalars['Float']['output'];
};

/** Where an order stands: PENDING → PAID → SHIPPED → DELIVERED, or CANCELLED from PENDING or PAID. */
export type OrderStatus =
  /** Cancelled; its stock went back. */
  | 'CANCELLED'
  /** Received. */
  | 'DELIVERED'
  /** Paid for. */
  | 'PAID'
  /** Placed; its stock is reserved. */
  | 'PENDING'
  /** On its way. */
  | 'SHIPPED';

/** A post written by a user (written and deleted over the REST API). */
export type Post = {
  __typename?: 'Post';
  /** Who wrote it. */
  author: User;
  /** Its text, up to 10000 characters. */
  body: Scalars['String']['output'];
  /** When it was written, ISO 8601 in UTC. */
  createdAt: Scalars['String']['output'];
  /** Assigned on creation. */
  id: Scalars['ID']['output'];
  /** Its title, 1 to 200 characters. */
  title: Scalars['String']['output'];
};

/** Reads. */
export type Query = {
  __typename?: 'Query';
  /** The caller, email included. Needs a token. */
  me?: Maybe<User>;
  /** The newest `limit` messages, oldest first; without `chatId`, those of every chat. */
  messages: Array<Message>;
  /** The caller's notifications, newest first. Needs a token. */
  notifications: Array<Notification>;
  /** An order of the caller, or any order for an admin: another user's fails FORBIDDEN, an unknown id NOT_FOUND. Needs a token. */
  order?: Maybe<Order>;
  /** A user by id: an unknown id fails NOT_FOUND. */
  user?: Maybe<User>;
  /** Users by id, in the order given, each read once however often named; null for an id no user has. Their posts are read for all of them at once. */
  users: Array<Maybe<User>>;
};


/** Reads. */
export type QueryMessagesArgs = {
  before?: InputMaybe<Scalars['ID']['input']>;
  chatId?: InputMaybe<Scalars['ID']['input']>;
  limit?: InputMaybe<Scalars['Int']['input']>;
};


/** Reads. */
export type QueryNotificationsArgs = {
  before?: InputMaybe<Scalars['ID']['input']>;
  limit?: InputMaybe<Scalars['Int']['input']>;
  unreadOnly?: InputMaybe<Scalars['Boolean']['input']>;
};


/** Reads. */
export type QueryOrderArgs = {
  id: Scalars['ID']['input'];
};


/** Reads. */
export type QueryUserArgs = {
  id: Scalars['ID']['input'];
};


/** Reads. */
export type QueryUsersArgs = {
  ids: Array<Scalars['ID']['input']>;
};

/** Live events, over WebSocket. */
export type Subscription = {
  __typename?: 'Subscription';
  /** Each new message as it is sent; only the given chat's when `chatId` is given. Within a chat, ids increase in the order messages are stored, and they arrive in that order, each once (across chats, ids are in no such order). After a lost connection, subscribe again with `after`, on any instance, to miss nothing. */
  messageAdded: Message;
  /** The figures of every instance, each every METRICS_INTERVAL_MS. Admins only: others fail FORBIDDEN. */
  metricsUpdated: Metrics;
  /** Each new notification of the caller, as it is made: ids increase in the order they are made, and they arrive in that order, each once. After a lost connection, subscribe again with `after`, on any instance, to miss nothing. Needs a token. */
  notificationAdded: Notification;
  /** First the order as it is when the subscription starts, then every status change of it, whichever way it came (an admin, a cancel, a payment), in the order they happened and each once (one that reaches the subscriber after a later one is left out: the later holds it). Only its owner or an admin may follow it: another user's fails FORBIDDEN, an unknown id NOT_FOUND. */
  orderUpdated: Order;
  /** Each user coming online (their first WebSocket opens, on any instance) or going offline (their last one closes, or its instance dies). Needs a token. */
  userStatusChanged: UserStatus;
};


/** Live events, over WebSocket. */
export type SubscriptionMessageAddedArgs = {
  after?: InputMaybe<Scalars['ID']['input']>;
  chatId?: InputMaybe<Scalars['ID']['input']>;
};


/** Live events, over WebSocket. */
export type SubscriptionNotificationAddedArgs = {
  after?: InputMaybe<Scalars['ID']['input']>;
};


/** Live events, over WebSocket. */
export type SubscriptionOrderUpdatedArgs = {
  orderId: Scalars['ID']['input'];
};

/** A user of the service, as others may see them. */
export type User = {
  __typename?: 'User';
  /** Their age, when they gave it. */
  age?: Maybe<Scalars['Int']['output']>;
  /** Their email: shown to the user themself and to admins; to everyone else it is the empty string. */
  email: Scalars['String']['output'];
  /** Whether they have verified their email (followed the link mailed to it): shown to the user themself and to admins, null to everyone else. */
  emailVerified?: Maybe<Scalars['Boolean']['output']>;
  /** Assigned on sign-up. */
  id: Scalars['ID']['output'];
  /** The name they go by. */
  name: Scalars['String']['output'];
  /** Their phone number in E.164 form, once they have given one (set through PATCH /users/{id} of the REST API): shown to the user themself and to admins, null to everyone else. */
  phoneNumber?: Maybe<Scalars['String']['output']>;
  /** Their posts, newest first; read for many users at once in one batch. */
  posts: Array<Post>;
  /** Whether they sign in with a second factor (a TOTP code): shown to the user themself and to admins, null to everyone else. */
  twoFactorEnabled?: Maybe<Scalars['Boolean']['output']>;
};


/** A user of the service, as others may see them. */
export type UserPostsArgs = {
  limit?: InputMaybe<Scalars['Int']['input']>;
};

/** A user coming online or going offline. */
export type UserStatus = {
  __typename?: 'UserStatus';
  /** When their last connection closed, ISO 8601 in UTC; null while online. */
  lastSeen?: Maybe<Scalars['String']['output']>;
  /** Online while at least one of their WebSocket connections is open, on any instance. */
  online: Scalars['Boolean']['output'];
  /** The user, null when the account is gone. */
  user?: Maybe<User>;
  /** Whose status changed. */
  userId: Scalars['ID']['output'];
};



export type ResolverTypeWrapper<T> = Promise<T> | T;


export type ResolverWithResolve<TResult, TParent, TContext, TArgs> = {
  resolve: ResolverFn<TResult, TParent, TContext, TArgs>;
};
export type Resolver<TResult, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = ResolverFn<TResult, TParent, TContext, TArgs> | ResolverWithResolve<TResult, TParent, TContext, TArgs>;

export type ResolverFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => Promise<TResult> | TResult;

export type SubscriptionSubscribeFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => AsyncIterable<TResult> | Promise<AsyncIterable<TResult>>;

export type SubscriptionResolveFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

export interface SubscriptionSubscriberObject<TResult, TKey extends string, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<{ [key in TKey]: TResult }, TParent, TContext, TArgs>;
  resolve?: SubscriptionResolveFn<TResult, { [key in TKey]: TResult }, TContext, TArgs>;
}

export interface SubscriptionResolverObject<TResult, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<any, TParent, TContext, TArgs>;
  resolve: SubscriptionResolveFn<TResult, any, TContext, TArgs>;
}

export type SubscriptionObject<TResult, TKey extends string, TParent, TContext, TArgs> =
  | SubscriptionSubscriberObject<TResult, TKey, TParent, TContext, TArgs>
  | SubscriptionResolverObject<TResult, TParent, TContext, TArgs>;

export type SubscriptionResolver<TResult, TKey extends string, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> =
  | ((...args: any[]) => SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>)
  | SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>;

export type TypeResolveFn<TTypes, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (
  parent: TParent,
  context: TContext,
  info: GraphQLResolveInfo
) => Maybe<TTypes> | Promise<Maybe<TTypes>>;

export type IsTypeOfResolverFn<T = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (obj: T, context: TContext, info: GraphQLResolveInfo) => boolean | Promise<boolean>;

export type NextResolverFn<T> = () => Promise<T>;

export type DirectiveResolverFn<TResult = Record<PropertyKey, never>, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = (
  next: NextResolverFn<TResult>,
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;





/** Mapping between all available schema types and the resolvers types */
export type ResolversTypes = {
  Boolean: ResolverTypeWrapper<Scalars['Boolean']['output']>;
  Float: ResolverTypeWrapper<Scalars['Float']['output']>;
  ID: ResolverTypeWrapper<Scalars['ID']['output']>;
  Int: ResolverTypeWrapper<Scalars['Int']['output']>;
  Message: ResolverTypeWrapper<MessageModel>;
  Metrics: ResolverTypeWrapper<Metrics>;
  Mutation: ResolverTypeWrapper<Record<PropertyKey, never>>;
  Notification: ResolverTypeWrapper<NotificationModel>;
  Order: ResolverTypeWrapper<OrderModel>;
  OrderItem: ResolverTypeWrapper<OrderItemModel>;
  OrderStatus: OrderStatus;
  Post: ResolverTypeWrapper<PostRow>;
  Query: ResolverTypeWrapper<Record<PropertyKey, never>>;
  String: ResolverTypeWrapper<Scalars['String']['output']>;
  Subscription: ResolverTypeWrapper<Record<PropertyKey, never>>;
  User: ResolverTypeWrapper<UserRow>;
  UserStatus: ResolverTypeWrapper<UserStatusModel>;
};

/** Mapping between all available schema types and the resolvers parents */
export type ResolversParentTypes = {
  Boolean: Scalars['Boolean']['output'];
  Float: Scalars['Float']['output'];
  ID: Scalars['ID']['output'];
  Int: Scalars['Int']['output'];
  Message: MessageModel;
  Metrics: Metrics;
  Mutation: Record<PropertyKey, never>;
  Notification: NotificationModel;
  Order: OrderModel;
  OrderItem: OrderItemModel;
  Post: PostRow;
  Query: Record<PropertyKey, never>;
  String: Scalars['String']['output'];
  Subscription: Record<PropertyKey, never>;
  User: UserRow;
  UserStatus: UserStatusModel;
};

export type RangeDirectiveArgs = {
  max: Scalars['Int']['input'];
  min: Scalars['Int']['input'];
};

export type RangeDirectiveResolver<Result, Parent, ContextType = GraphQLContext, Args = RangeDirectiveArgs> = DirectiveResolverFn<Result, Parent, ContextType, Args>;

export type MessageResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Message'] = ResolversParentTypes['Message']> = {
  author?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  chatId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  text?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type MetricsResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Metrics'] = ResolversParentTypes['Metrics']> = {
  activeSubscriptions?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  connectedClients?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  eventLoopDelayMs?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
  heapUsedBytes?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
  instanceId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  requestsPerSecond?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
  timestamp?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  uptimeSeconds?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
};

export type MutationResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Mutation'] = ResolversParentTypes['Mutation']> = {
  markNotificationRead: Resolver<ResolversTypes['Notification'], ParentType, ContextType, RequireFields<MutationMarkNotificationReadArgs, 'id'>>;
  sendMessage: Resolver<ResolversTypes['Message'], ParentType, ContextType, RequireFields<MutationSendMessageArgs, 'author' | 'chatId' | 'text'>>;
};

export type NotificationResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Notification'] = ResolversParentTypes['Notification']> = {
  body?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  kind?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  read?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  title?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type OrderResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Order'] = ResolversParentTypes['Order']> = {
  createdAt?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  items?: Resolver<Array<ResolversTypes['OrderItem']>, ParentType, ContextType>;
  status?: Resolver<ResolversTypes['OrderStatus'], ParentType, ContextType>;
  total?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
  updatedAt?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  userId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
};

export type OrderItemResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['OrderItem'] = ResolversParentTypes['OrderItem']> = {
  productId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  quantity?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  unitPrice?: Resolver<ResolversTypes['Float'], ParentType, ContextType>;
};

export type PostResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Post'] = ResolversParentTypes['Post']> = {
  author?: Resolver<ResolversTypes['User'], ParentType, ContextType>;
  body?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  createdAt?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  title?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
};

export type QueryResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Query'] = ResolversParentTypes['Query']> = {
  me: Resolver<Maybe<ResolversTypes['User']>, ParentType, ContextType>;
  messages: Resolver<Array<ResolversTypes['Message']>, ParentType, ContextType, RequireFields<QueryMessagesArgs, 'limit'>>;
  notifications: Resolver<Array<ResolversTypes['Notification']>, ParentType, ContextType, RequireFields<QueryNotificationsArgs, 'limit' | 'unreadOnly'>>;
  order: Resolver<Maybe<ResolversTypes['Order']>, ParentType, ContextType, RequireFields<QueryOrderArgs, 'id'>>;
  user: Resolver<Maybe<ResolversTypes['User']>, ParentType, ContextType, RequireFields<QueryUserArgs, 'id'>>;
  users: Resolver<Array<Maybe<ResolversTypes['User']>>, ParentType, ContextType, RequireFields<QueryUsersArgs, 'ids'>>;
};

export type SubscriptionResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['Subscription'] = ResolversParentTypes['Subscription']> = {
  messageAdded: SubscriptionResolver<ResolversTypes['Message'], "messageAdded", ParentType, ContextType, Partial<SubscriptionMessageAddedArgs>>;
  metricsUpdated: SubscriptionResolver<ResolversTypes['Metrics'], "metricsUpdated", ParentType, ContextType>;
  notificationAdded: SubscriptionResolver<ResolversTypes['Notification'], "notificationAdded", ParentType, ContextType, Partial<SubscriptionNotificationAddedArgs>>;
  orderUpdated: SubscriptionResolver<ResolversTypes['Order'], "orderUpdated", ParentType, ContextType, RequireFields<SubscriptionOrderUpdatedArgs, 'orderId'>>;
  userStatusChanged: SubscriptionResolver<ResolversTypes['UserStatus'], "userStatusChanged", ParentType, ContextType>;
};

export type UserResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['User'] = ResolversParentTypes['User']> = {
  age?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  email?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  emailVerified?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  phoneNumber?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  posts?: Resolver<Array<ResolversTypes['Post']>, ParentType, ContextType, RequireFields<UserPostsArgs, 'limit'>>;
  twoFactorEnabled?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
};

export type UserStatusResolvers<ContextType = GraphQLContext, ParentType extends ResolversParentTypes['UserStatus'] = ResolversParentTypes['UserStatus']> = {
  lastSeen?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  online?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  user?: Resolver<Maybe<ResolversTypes['User']>, ParentType, ContextType>;
  userId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
};

export type Resolvers<ContextType = GraphQLContext> = {
  Message?: MessageResolvers<ContextType>;
  Metrics?: MetricsResolvers<ContextType>;
  Mutation?: MutationResolvers<ContextType>;
  Notification?: NotificationResolvers<ContextType>;
  Order?: OrderResolvers<ContextType>;
  OrderItem?: OrderItemResolvers<ContextType>;
  Post?: PostResolvers<ContextType>;
  Query?: QueryResolvers<ContextType>;
  Subscription?: SubscriptionResolvers<ContextType>;
  User?: UserResolvers<ContextType>;
  UserStatus?: UserStatusResolvers<ContextType>;
};

export type DirectiveResolvers<ContextType = GraphQLContext> = {
  range?: RangeDirectiveResolver<any, any, ContextType>;
};

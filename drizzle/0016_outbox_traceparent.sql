-- The W3C traceparent of the change an event reports, when tracing is on, so that its
-- delivery on any instance, by the relay too, joins the trace of that change.
ALTER TABLE "outbox" ADD COLUMN "traceparent" text;
//! The response body, watched for the trailers that end the call.

use super::*;

impl Body for PolicyBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        if this.completion.ticket.is_some() {
            if let Some(sleep) = &mut this.deadline {
                if sleep.as_mut().poll(cx).is_ready() {
                    this.completion.finish(Status::DeadlineExceeded, None);
                    return Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(
                        "deadline exceeded",
                    ))));
                }
            }
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let status = status_class(trailers).unwrap_or(Status::Error);
                    this.completion.finish(status, orca::from_headers(trailers));
                }
            }
            Poll::Ready(Some(Err(_))) => this.completion.finish(Status::Error, None),
            // The body ended without trailers: a protocol error for gRPC.
            Poll::Ready(None) => this.completion.finish(Status::Error, None),
            Poll::Pending => {}
        }
        polled.map_err(|e| {
            let mut status = tonic::Status::unavailable(format!("connection error: {e}"));
            status.set_source(Arc::new(e));
            status
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

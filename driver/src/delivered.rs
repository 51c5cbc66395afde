//! A receive completion as a `Read`.

use std::io::{self, Read};

/// What one receive completion delivered, as [`crate::Link::read`] reads it: its bytes, then
/// `WouldBlock` (or the end of the stream, or the receive's error, once). A completion-based
/// backend (io_uring) hands each receive to its `Link` this way.
#[derive(Debug)]
pub enum Delivered<'a> {
    /// The bytes received (those not yet read).
    Bytes(&'a [u8]),
    /// The end of the stream (a receive of 0 bytes).
    End,
    /// The receive's error, by its OS number.
    Failed(i32),
    /// Read: the next read would block.
    Spent,
}

impl Read for Delivered<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Delivered::Bytes(b) => {
                let n = b.len().min(buf.len());
                buf[..n].copy_from_slice(&b[..n]);
                *b = &b[n..];
                if b.is_empty() {
                    *self = Delivered::Spent;
                }
                Ok(n)
            }
            Delivered::End => Ok(0),
            Delivered::Failed(errno) => {
                let e = io::Error::from_raw_os_error(*errno);
                *self = Delivered::Spent;
                Err(e)
            }
            Delivered::Spent => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn delivered_bytes_then_would_block() {
        // 104 is Linux's ECONNRESET.
        let mut buf = [0u8; 4];
        let mut d = Delivered::Bytes(b"hello");
        assert_eq!(d.read(&mut buf).unwrap(), 4);
        assert_eq!(&buf, b"hell");
        assert_eq!(d.read(&mut buf).unwrap(), 1);
        assert_eq!(d.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert_eq!(Delivered::End.read(&mut buf).unwrap(), 0);
        let mut f = Delivered::Failed(104);
        assert_eq!(f.read(&mut buf).unwrap_err().kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(f.read(&mut buf).unwrap_err().kind(), io::ErrorKind::WouldBlock);
    }
}

//! The 16550 UART of the `virt` board: log output, and bytes received, with the receive
//! interrupt (PLIC source [`UART_IRQ`]).
//!
//! The receive FIFO stays off, as QEMU starts it: each byte raises the interrupt on its own
//! and the handler takes it from the receive register before the next one can arrive.

use core::fmt::{self, Write};
use core::ptr::{read_volatile, write_volatile};

const UART_BASE: usize = 0x1000_0000;
/// Receive buffer (read) / transmit holding (write).
const RBR_THR: usize = UART_BASE;
/// Interrupt enable.
const IER: usize = UART_BASE + 1;
/// Line status.
const LSR: usize = UART_BASE + 5;
/// LSR: a received byte is waiting.
const LSR_DATA_READY: u8 = 0x01;
/// LSR: the transmit holding register is empty.
const LSR_THR_EMPTY: u8 = 0x20;
/// IER: interrupt when a received byte is waiting.
const IER_RX_AVAILABLE: u8 = 0x01;
/// IER: interrupt when the transmit holding register is empty.
const IER_TX_EMPTY: u8 = 0x02;

/// The UART's interrupt source number on the `virt` board's PLIC.
pub const UART_IRQ: u32 = 10;

/// The UART.
#[derive(Debug)]
pub struct Uart;

impl Uart {
    /// Raises the UART's interrupt whenever a received byte waits (route it with
    /// [`enable_irq`](super::enable_irq)`(UART_IRQ, handler)`).
    pub fn enable_rx_interrupt() {
        // SAFETY: the UART's interrupt-enable register; only the receive interrupt is set.
        unsafe { write_volatile(IER as *mut u8, IER_RX_AVAILABLE) };
    }

    /// Stops raising the receive interrupt (received bytes wait in the UART, and the
    /// sender is held off).
    pub fn disable_rx_interrupt() {
        // SAFETY: the UART's interrupt-enable register; clears every interrupt source.
        unsafe { write_volatile(IER as *mut u8, 0) };
    }

    /// Raises the UART's interrupt at once, by asking for the transmit-empty interrupt
    /// while the transmitter is idle: a device interrupt the firmware can trigger itself,
    /// to measure the interrupt-to-task path. The handler turns it off again with
    /// [`disable_rx_interrupt`](Self::disable_rx_interrupt) or
    /// [`enable_rx_interrupt`](Self::enable_rx_interrupt).
    #[inline(always)]
    pub fn ring_doorbell() {
        // SAFETY: the UART's interrupt-enable register.
        unsafe { write_volatile(IER as *mut u8, IER_TX_EMPTY) };
    }

    /// Takes the received byte, if one is waiting (which clears the interrupt).
    #[inline(always)]
    pub fn read_byte() -> Option<u8> {
        // SAFETY: line-status and receive registers; reading RBR only when LSR says a byte
        // is there.
        unsafe {
            if read_volatile(LSR as *const u8) & LSR_DATA_READY == 0 {
                None
            } else {
                Some(read_volatile(RBR_THR as *const u8))
            }
        }
    }
}

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            // SAFETY: the UART's line-status and transmit registers; waiting for THRE
            // before each byte.
            unsafe {
                while read_volatile(LSR as *const u8) & LSR_THR_EMPTY == 0 {}
                write_volatile(RBR_THR as *mut u8, b);
            }
        }
        Ok(())
    }
}

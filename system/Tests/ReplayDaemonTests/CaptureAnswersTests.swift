@testable import ReplayDaemon
import Synchronization
import Testing

@Suite struct CaptureAnswersTests {
    /// Answers meet their questions in the order asked; an answer nobody asked for is said so.
    @Test func answersMeetTheirQuestionsInOrder() {
        let answers = CaptureAnswers<Int>()
        let heard = Mutex<[String]>([])
        answers.ask({ true }) { answer in heard.withLock { $0.append("first \(answer ?? -1)") } }
        answers.ask({ true }) { answer in heard.withLock { $0.append("second \(answer ?? -1)") } }
        #expect(heard.withLock { $0 }.isEmpty, "nothing is answered before the process answers")
        #expect(answers.answer(1))
        #expect(answers.answer(2))
        #expect(!answers.answer(3), "a third answer has no question")
        #expect(heard.withLock { $0 } == ["first 1", "second 2"])
    }

    /// A gone process answers every waiting question, and every later one, with nil.
    @Test func aGoneProcessAnswersNil() {
        let answers = CaptureAnswers<Int>()
        let heard = Mutex<[Int?]>([])
        answers.ask({ true }) { answer in heard.withLock { $0.append(answer) } }
        answers.close()
        #expect(heard.withLock { $0 } == [nil])
        let sent = Mutex(false)
        answers.ask({ sent.withLock { $0 = true }; return true }) { answer in heard.withLock { $0.append(answer) } }
        #expect(heard.withLock { $0 } == [nil, nil])
        #expect(!sent.withLock { $0 }, "nothing is sent to a gone process")
        #expect(!answers.answer(1))
    }

    /// A question that could not be sent is answered nil at once and waits for nothing.
    @Test func anUnsentQuestionIsAnsweredNil() {
        let answers = CaptureAnswers<Int>()
        let heard = Mutex<[Int?]>([])
        answers.ask({ false }) { answer in heard.withLock { $0.append(answer) } }
        #expect(heard.withLock { $0 } == [nil])
        #expect(!answers.answer(1), "its answer, if any came, would be nobody's")
    }
}
